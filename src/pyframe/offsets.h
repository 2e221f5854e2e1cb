/* Where CPython keeps what the frame walker reads, per version.
 *
 * 3.10-3.12 have no self-description: the offsets come from per-minor
 * tables (checked against pyenv's 3.10.13, 3.11.7 and 3.12.1 with gdb and
 * their DWARF) and are validated against the live runtime at attach.
 * 3.13+ publish _Py_DebugOffsets at the start of _PyRuntime (cookie
 * "xdebugpy", version = PY_VERSION_HEX); causeway reads it from the target
 * and never trusts a table for it. What differs between 3.13, 3.14 and 3.15
 * is only where each offset sits in that structure (fields were added in
 * the middle of its blocks), which offsets_debug.c describes per minor. */
#ifndef CW_PYFRAME_OFFSETS_H
#define CW_PYFRAME_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "util/rmem.h"

/* The frame layout family: decides how the walker steps. */
enum cw_py_frame_kind {
	CW_PY_FRAME_OBJECT = 1, /* 3.10: PyFrameObject chain via f_back, f_lasti */
	CW_PY_FRAME_INTERP = 2, /* 3.11+: _PyInterpreterFrame chain via previous */
};

struct cw_py_offsets {
	uint32_t version_hex; /* PY_VERSION_HEX of the target (0 when only the minor is known) */
	int minor;            /* 10, 11, 12, 13 */
	enum cw_py_frame_kind frame_kind;

	/* _PyRuntimeState */
	uint32_t rt_interp_head;
	/* PyInterpreterState */
	uint32_t is_next, is_threads_head;
	/* PyThreadState */
	uint32_t ts_next, ts_interp, ts_thread_id;
	int32_t ts_native_thread_id; /* -1 before 3.11: TID comes from struct pthread */
	uint32_t ts_frame;           /* 3.10 frame, 3.11/3.12 cframe, 3.13 current_frame */
	int32_t cframe_current;      /* -1 when ts_frame already is the frame (3.10, 3.13+) */
	/* frames: PyFrameObject (3.10) or _PyInterpreterFrame (3.11+) */
	uint32_t fr_back, fr_code, fr_lasti; /* fr_lasti: f_lasti (int) or prev_instr/instr_ptr */
	int32_t fr_owner;                    /* -1 when frames have no owner byte */
	/* PyCodeObject */
	uint32_t co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
	uint32_t co_code_adaptive; /* 3.11+: first code unit is inline at this offset */
	/* objects */
	uint32_t ob_type, tp_name, var_size, bytes_sval;
	uint32_t unicode_state, unicode_length, ascii_size; /* ascii_size = sizeof(PyASCIIObject) */
	uint32_t autotss_key; /* _PyRuntime.(gilstate.)autoTSSkey: Py_tss_t, 0 unknown */
	/* f_executable is a tagged _PyStackRef from 3.14: the object is
	 * (word & code_mask). All ones before 3.14. */
	uint64_t code_mask;
	/* Free-threaded builds (3.14t/3.15t, Py_GIL_DISABLED): each thread may
	 * run its own copy of a code object's bytecode. The frame's int32
	 * tlbc_index picks entries[index] of the code's co_tlbc array
	 * (_PyCodeArray: Py_ssize_t size; char *entries[size]); entry 0 is the
	 * inline co_code_adaptive. fr_tlbc_index is -1 on default builds. */
	int free_threaded;
	int32_t fr_tlbc_index;
	uint32_t co_tlbc;
	/* First bit of the kind:3, compact:1, ascii:1 run in PyASCIIObject's
	 * state: 2 after interned:2, 8 on free-threaded builds, whose interned
	 * is a whole byte (atomic access, 3.14). */
	uint8_t str_kind_shift;
};

/* Most entries a _PyCodeArray is trusted to have: one per thread that ever
 * ran the code, capped like the thread list. */
#define CW_PY_TLBC_MAX 4096

/* Frame owner values (pycore_frame.h 3.12/3.13, pycore_interpframe_structs.h
 * 3.14+): 0 thread, 1 generator, 2 frame object hold user code; 3 is the
 * C stack's shim on 3.12/3.13 and the interpreter's entry frame on 3.14+,
 * 4 the C stack's shim on 3.14. Every owner >= 3 is skipped. */
#define CW_PY_OWNED_BY_CSTACK 3

/* The built-in table for minor 10, 11 or 12. Returns 0 or -ENOTSUP. */
int cw_py_offsets_builtin(int minor, struct cw_py_offsets *out);

/* Reads and checks _Py_DebugOffsets at runtime_addr (3.13+). runtime_size
 * is the size of the _PyRuntime symbol (0 unknown): the structure's own
 * runtime size must equal it. Returns 0, -EPROTO for a missing cookie or
 * offsets that fail validation, -ENOTSUP for a version or build causeway
 * does not know (the version is still stored in *version_hex), or a read
 * error. why (may be NULL) gets a lower-case reason naming the version and
 * what was wrong. */
int cw_py_offsets_debug(struct cw_rmem *m, uint64_t runtime_addr, uint64_t runtime_size, struct cw_py_offsets *out,
			uint32_t *version_hex, char *why, size_t whylen);

/* The same over a copy of the structure's bytes (tests, fuzzing). */
int cw_py_offsets_debug_parse(const uint8_t *buf, size_t len, uint64_t runtime_size, struct cw_py_offsets *out,
			      uint32_t *version_hex, char *why, size_t whylen);

/* Bytes of _Py_DebugOffsets causeway reads (the largest known layout). */
#define CW_PY_DEBUG_OFFSETS_READ 1024

#endif
