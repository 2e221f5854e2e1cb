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
	case 10: *out = py310; return 0;
	case 11: *out = py311; return 0;
	case 12: *out = py312; return 0;
	default: return -ENOTSUP;
	}
}

/* struct _Py_DebugOffsets as of 3.13.0 (Include/internal/pycore_runtime.h):
 * a cookie, the version, then per-struct blocks of u64 {size, fields...}. */
struct dbg313 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct { uint64_t size, finalizing, interpreters_head; } rt;
	struct { uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
		gil_rs, gil_enabled, gil_locked, gil_holder; } is;
	struct { uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
		datastack_chunk, status; } ts;
	struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } fr;
	struct { uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
		localsplusnames, localspluskinds, co_code_adaptive; } co;
	struct { uint64_t size, ob_type; } ob;
	struct { uint64_t size, tp_name, tp_repr, tp_flags; } tp;
	struct { uint64_t size, ob_item, ob_size; } tuple, list;
	struct { uint64_t size, ma_keys, ma_values; } dict;
	struct { uint64_t size, ob_fval; } flt;
	struct { uint64_t size, lv_tag, ob_digit; } lng;
	struct { uint64_t size, ob_size, ob_sval; } bytes;
	struct { uint64_t size, state, length, asciiobject_size; } uni;
	struct { uint64_t size, collecting; } gc;
};
_Static_assert(sizeof(struct dbg313) == 584, "_Py_DebugOffsets 3.13 layout");

/* An offset from the target must land inside the struct it describes.
 * 4 MiB bounds every CPython struct (3.13.0's PyInterpreterState is about
 * 190 KiB, _PyRuntimeState about 280 KiB), and the walker's offsets are
 * stored as u32. */
static int fits(uint64_t off, uint64_t size, uint64_t width)
{
	return size <= (4u << 20) && off + width <= size;
}

int cw_py_offsets_debug(struct cw_rmem *m, uint64_t runtime_addr, struct cw_py_offsets *out, uint32_t *version_hex)
{
	struct dbg313 d;
	int err;

	*version_hex = 0;
	err = cw_rmem_read(m, runtime_addr, &d, sizeof(d));
	if (err)
		return err;
	if (memcmp(d.cookie, "xdebugpy", 8) != 0)
		return -EPROTO;
	*version_hex = (uint32_t)d.version;
	if ((d.version >> 24) != 3 || ((d.version >> 16) & 0xff) != 13)
		return -ENOTSUP; /* 3.14 reordered the blocks; only 3.13's layout is known */
	if (d.free_threaded)
		return -ENOTSUP; /* free-threaded builds tag object headers differently */
	if (!fits(d.rt.interpreters_head, d.rt.size, 8) || !fits(d.is.next, d.is.size, 8) ||
	    !fits(d.is.threads_head, d.is.size, 8) || !fits(d.ts.next, d.ts.size, 8) ||
	    !fits(d.ts.interp, d.ts.size, 8) || !fits(d.ts.current_frame, d.ts.size, 8) ||
	    !fits(d.ts.native_thread_id, d.ts.size, 8) || !fits(d.ts.thread_id, d.ts.size, 8) ||
	    !fits(d.fr.previous, d.fr.size, 8) || !fits(d.fr.executable, d.fr.size, 8) ||
	    !fits(d.fr.instr_ptr, d.fr.size, 8) || !fits(d.fr.owner, d.fr.size, 1) ||
	    !fits(d.co.filename, d.co.size, 8) || !fits(d.co.name, d.co.size, 8) ||
	    !fits(d.co.qualname, d.co.size, 8) || !fits(d.co.linetable, d.co.size, 8) ||
	    !fits(d.co.firstlineno, d.co.size, 4) || d.co.co_code_adaptive > 65536 ||
	    !fits(d.ob.ob_type, d.ob.size, 8) || !fits(d.tp.tp_name, d.tp.size, 8) ||
	    d.bytes.ob_sval > 4096 || d.bytes.ob_size > 4096 || d.uni.asciiobject_size > 4096 ||
	    d.uni.state > 4096 || d.uni.length > 4096)
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->version_hex = (uint32_t)d.version;
	out->minor = 13;
	out->frame_kind = CW_PY_FRAME_INTERP;
	out->rt_interp_head = (uint32_t)d.rt.interpreters_head;
	out->is_next = (uint32_t)d.is.next;
	out->is_threads_head = (uint32_t)d.is.threads_head;
	out->ts_next = (uint32_t)d.ts.next;
	out->ts_interp = (uint32_t)d.ts.interp;
	out->ts_thread_id = (uint32_t)d.ts.thread_id;
	out->ts_native_thread_id = (int32_t)d.ts.native_thread_id;
	out->ts_frame = (uint32_t)d.ts.current_frame;
	out->cframe_current = -1;
	out->fr_back = (uint32_t)d.fr.previous;
	out->fr_code = (uint32_t)d.fr.executable;
	out->fr_lasti = (uint32_t)d.fr.instr_ptr;
	out->fr_owner = (int32_t)d.fr.owner;
	out->co_filename = (uint32_t)d.co.filename;
	out->co_name = (uint32_t)d.co.name;
	out->co_qualname = (uint32_t)d.co.qualname;
	out->co_firstlineno = (uint32_t)d.co.firstlineno;
	out->co_linetable = (uint32_t)d.co.linetable;
	out->co_code_adaptive = (uint32_t)d.co.co_code_adaptive;
	out->ob_type = (uint32_t)d.ob.ob_type;
	out->tp_name = (uint32_t)d.tp.tp_name;
	out->var_size = (uint32_t)d.bytes.ob_size;
	out->bytes_sval = (uint32_t)d.bytes.ob_sval;
	out->unicode_state = (uint32_t)d.uni.state;
	out->unicode_length = (uint32_t)d.uni.length;
	out->ascii_size = (uint32_t)d.uni.asciiobject_size;
	/* 3.13 reads the current thread from static TLS (_Py_tss_tstate);
	 * the autoTSSkey is still kept in _PyRuntime but not published. */
	out->autotss_key = 0;
	return 0;
}
