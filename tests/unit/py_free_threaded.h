/* CPython 3.14t/3.15t (Py_GIL_DISABLED) _Py_DebugOffsets, built from the
 * recorded default 3.14.10/3.15.2 bytes (py_debug_offsets_recorded.h): no
 * free-threaded interpreter is packaged for Debian, so every word that
 * Py_GIL_DISABLED changes among those causeway reads is set to what
 * CPython 3.14's headers give for that build:
 *  - PyObject (Include/object.h) is ob_tid, ob_flags, ob_mutex, ob_gc_bits,
 *    ob_ref_local, ob_ref_shared, ob_type: 32 bytes, ob_type at 24, so every
 *    word from the code block to the unicode block (offsets after an object
 *    header, and struct sizes) grows by 16;
 *  - PyCodeObject (Include/cpython/code.h) gains _PyCodeArray *co_tlbc just
 *    before co_code_adaptive (0xe0, 0xe8, size 0xf0);
 *  - _PyInterpreterFrame (pycore_interpframe_structs.h) gains int32_t
 *    tlbc_index after stackpointer (0x48), moving owner from 0x4a to 0x4e.
 * Used by tests/unit/test_free_threaded.c and the ft_python fixture. */
#ifndef CW_TEST_PY_FREE_THREADED_H
#define CW_TEST_PY_FREE_THREADED_H

#include <stdint.h>
#include <string.h>

#include "py_debug_offsets_recorded.h"

static inline uint64_t ft_word(const uint8_t *b, int i)
{
	uint64_t v;

	memcpy(&v, b + 8 + 8 * i, 8);
	return v;
}

static inline void ft_set_word(uint8_t *b, int i, uint64_t v) { memcpy(b + 8 + 8 * i, &v, 8); }

/* fr_owner, fr_tlbc: word indexes; co_size..last: the code block's first
 * word through the unicode block's last; co_adaptive, co_tlbc: words. */
static inline void ft_make(uint8_t *b, const uint8_t *recorded, int fr_owner, int fr_tlbc, int co_size,
			   int co_adaptive, int co_tlbc, int last)
{
	int i;

	memcpy(b, recorded, 1024);
	ft_set_word(b, 1, 1);
	ft_set_word(b, fr_owner, 0x4e);
	ft_set_word(b, fr_tlbc, 0x48);
	for (i = co_size; i <= last; i++)
		ft_set_word(b, i, ft_word(b, i) + 16);
	ft_set_word(b, co_size, 0xf0);
	ft_set_word(b, co_adaptive, 0xe8);
	ft_set_word(b, co_tlbc, 0xe0);
}

static inline void ft314(uint8_t *b) { ft_make(b, py314_debug_offsets, 35, 37, 38, 47, 48, 79); }
static inline void ft315(uint8_t *b) { ft_make(b, py315_debug_offsets, 43, 45, 46, 55, 56, 91); }

#endif
