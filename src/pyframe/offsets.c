#include "pyframe/offsets.h"

#include <errno.h>
#include <string.h>

/* Offsets read with `gdb -batch -ex 'p &((T *)0)->field'` from pyenv's
 * builds (x86-64, default configure, no --with-pydebug). Stable within a
 * minor release: CPython does not change these structs in bugfix releases
 * because extensions embed them. */
static const struct cw_py_offsets py310 = {
	.minor = 10, .frame_kind = CW_PY_FRAME_OBJECT,
	.rt_interp_head = 32,
	.is_next = 0, .is_threads_head = 8,
	.ts_next = 8, .ts_interp = 16, .ts_thread_id = 176, .ts_native_thread_id = -1,
	.ts_frame = 24, .cframe_current = -1,
	.fr_back = 24, .fr_code = 32, .fr_lasti = 96, .fr_owner = -1,
	.co_filename = 104, .co_name = 112, .co_qualname = 0, .co_firstlineno = 40, .co_linetable = 120,
	.co_code_adaptive = 0,
	.ob_type = 8, .tp_name = 24, .var_size = 16, .bytes_sval = 32,
	.unicode_state = 32, .unicode_length = 16, .ascii_size = 48,
	.autotss_key = 584,
};

static const struct cw_py_offsets py311 = {
	.minor = 11, .frame_kind = CW_PY_FRAME_INTERP,
	.rt_interp_head = 40,
	.is_next = 0, .is_threads_head = 16,
	.ts_next = 8, .ts_interp = 16, .ts_thread_id = 152, .ts_native_thread_id = 160,
	.ts_frame = 56, .cframe_current = 8,
	.fr_back = 48, .fr_code = 32, .fr_lasti = 56, .fr_owner = -1, /* 3.11 has no shim frames */
	.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 72, .co_linetable = 136,
	.co_code_adaptive = 184,
	.ob_type = 8, .tp_name = 24, .var_size = 16, .bytes_sval = 32,
	.unicode_state = 32, .unicode_length = 16, .ascii_size = 48,
	.autotss_key = 592,
};

static const struct cw_py_offsets py312 = {
	.minor = 12, .frame_kind = CW_PY_FRAME_INTERP,
	.rt_interp_head = 40,
	.is_next = 0, .is_threads_head = 72,
	.ts_next = 8, .ts_interp = 16, .ts_thread_id = 136, .ts_native_thread_id = 144,
	.ts_frame = 56, .cframe_current = 0,
	.fr_back = 8, .fr_code = 0, .fr_lasti = 56, .fr_owner = 70,
	.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68, .co_linetable = 136,
	.co_code_adaptive = 192,
	.ob_type = 8, .tp_name = 24, .var_size = 16, .bytes_sval = 32,
	/* 3.12 dropped wstr: PyASCIIObject shrank to 40 bytes */
	.unicode_state = 32, .unicode_length = 16, .ascii_size = 40,
	.autotss_key = 1544,
};

int cw_py_offsets_builtin(int minor, struct cw_py_offsets *out)
{
	switch (minor) {
	case 10: *out = py310; break;
	case 11: *out = py311; break;
	case 12: *out = py312; break;
	default: return -ENOTSUP;
	}
	out->code_mask = ~0ull;
	out->fr_tlbc_index = -1;
	out->str_kind_shift = 2;
	return 0;
}
