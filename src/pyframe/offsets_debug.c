/* _Py_DebugOffsets (CPython 3.13+): the runtime's description of its own
 * structures, at the start of _PyRuntime.
 *
 * The structure is an 8-byte cookie followed by u64 words: the version, the
 * free-threaded flag, then one block per CPython struct, each a size and
 * offsets into that struct. Between minors CPython inserts fields in the
 * middle of blocks (3.14: threads_main, code_object_generation,
 * stackpointer, tlbc fields, a set block; 3.15: more thread-state fields and
 * an exception block), so where each offset sits is described here per
 * minor, as word indexes checked against Debian's 3.14.10 and 3.15.2 and
 * pyenv's 3.13.0 (tests/fixtures/py/debug_offsets_*.bin are their bytes).
 *
 * Everything read is hostile: every size is bounded, every offset must fit
 * inside the struct its block describes, and offsets that have not moved
 * since 3.13 on any default build (object header, frame links, thread-state
 * links, bytes and str headers) are anchors: a prerelease or a build whose
 * layout differs from its minor's fails them and is refused by name rather
 * than read with wrong offsets. */
#include "pyframe/offsets.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Word indexes (word 0 is the version) of what causeway reads. */
struct dbg_layout {
	int minor;
	uint8_t nwords; /* words up to and including the last one used */
	uint8_t rt_size, rt_interp_head;
	uint8_t is_size, is_next, is_threads_head;
	uint8_t ts_size, ts_next, ts_interp, ts_current_frame, ts_thread_id, ts_native_thread_id;
	uint8_t fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner, fr_tlbc_index;
	uint8_t co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_code_adaptive, co_tlbc;
	uint8_t ob_size, ob_type, tp_size, tp_name;
	uint8_t by_size, by_ob_size, by_sval;
	uint8_t un_size, un_state, un_length, un_ascii;
};

static const struct dbg_layout layouts[] = {
	/* 3.13: 13 interpreter words, 9 thread-state, 6 frame, 10 code */
	{ .minor = 13, .nwords = 70,
	  .rt_size = 2, .rt_interp_head = 4,
	  .is_size = 5, .is_next = 7, .is_threads_head = 8,
	  .ts_size = 18, .ts_next = 20, .ts_interp = 21, .ts_current_frame = 22, .ts_thread_id = 23,
	  .ts_native_thread_id = 24,
	  .fr_size = 27, .fr_previous = 28, .fr_executable = 29, .fr_instr_ptr = 30, .fr_owner = 32,
	  .co_size = 33, .co_filename = 34, .co_name = 35, .co_qualname = 36, .co_linetable = 37,
	  .co_firstlineno = 38, .co_code_adaptive = 42,
	  .ob_size = 43, .ob_type = 44, .tp_size = 45, .tp_name = 46,
	  .by_size = 63, .by_ob_size = 64, .by_sval = 65,
	  .un_size = 66, .un_state = 67, .un_length = 68, .un_ascii = 69 },
	/* 3.14: + threads_main, code_object_generation, tlbc_generation;
	 * frame + stackpointer, tlbc_index; code + co_tlbc; a set block */
	{ .minor = 14, .nwords = 80,
	  .rt_size = 2, .rt_interp_head = 4,
	  .is_size = 5, .is_next = 7, .is_threads_head = 8,
	  .ts_size = 21, .ts_next = 23, .ts_interp = 24, .ts_current_frame = 25, .ts_thread_id = 26,
	  .ts_native_thread_id = 27,
	  .fr_size = 30, .fr_previous = 31, .fr_executable = 32, .fr_instr_ptr = 33, .fr_owner = 35, .fr_tlbc_index = 37,
	  .co_size = 38, .co_filename = 39, .co_name = 40, .co_qualname = 41, .co_linetable = 42,
	  .co_firstlineno = 43, .co_code_adaptive = 47, .co_tlbc = 48,
	  .ob_size = 49, .ob_type = 50, .tp_size = 51, .tp_name = 52,
	  .by_size = 73, .by_ob_size = 74, .by_sval = 75,
	  .un_size = 76, .un_state = 77, .un_length = 78, .un_ascii = 79 },
	/* 3.15: thread state + base_frame, last_profiled_frame and a third
	 * frame pointer, holds_gil, gil_requested, current_exception,
	 * exc_state, then an exception-item block; the type block grows by 4 */
	{ .minor = 15, .nwords = 92,
	  .rt_size = 2, .rt_interp_head = 4,
	  .is_size = 5, .is_next = 7, .is_threads_head = 8,
	  .ts_size = 21, .ts_next = 23, .ts_interp = 24, .ts_current_frame = 25, .ts_thread_id = 29,
	  .ts_native_thread_id = 30,
	  .fr_size = 38, .fr_previous = 39, .fr_executable = 40, .fr_instr_ptr = 41, .fr_owner = 43, .fr_tlbc_index = 45,
	  .co_size = 46, .co_filename = 47, .co_name = 48, .co_qualname = 49, .co_linetable = 50,
	  .co_firstlineno = 51, .co_code_adaptive = 55, .co_tlbc = 56,
	  .ob_size = 57, .ob_type = 58, .tp_size = 59, .tp_name = 60,
	  .by_size = 85, .by_ob_size = 86, .by_sval = 87,
	  .un_size = 88, .un_state = 89, .un_length = 90, .un_ascii = 91 },
};

/* Anchor values: the object header decides them. Py_GIL_DISABLED's
 * PyObject is ob_tid, ob_flags, ob_mutex, ob_gc_bits, ob_ref_local,
 * ob_ref_shared, ob_type (32 bytes, Include/object.h 3.14), which moves
 * every header after it by 16; PyASCIIObject's state is then 4-aligned
 * after hash and the struct 56 bytes (Include/cpython/unicodeobject.h). */
struct dbg_anchors {
	uint64_t ob_size, ob_type, tp_name, by_ob_size, un_length, un_state, un_ascii;
};

static const struct dbg_anchors anchors_default = { 16, 8, 24, 16, 16, 32, 40 };
static const struct dbg_anchors anchors_free_threaded = { 32, 24, 40, 32, 32, 48, 56 };

_Static_assert(8 + 92 * 8 <= CW_PY_DEBUG_OFFSETS_READ, "read covers every layout");

/* 4 MiB bounds every CPython struct (3.15.2's PyInterpreterState is about
 * 220 KiB, _PyRuntimeState about 340 KiB); the walker stores offsets as u32. */
#define STRUCT_MAX (4u << 20)

struct check {
	const uint64_t *w;
	char *why;
	size_t whylen;
	const char *ver;
};

__attribute__((format(printf, 2, 3))) static int bad(struct check *c, const char *fmt, ...)
{
	char detail[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (c->why)
		snprintf(c->why, c->whylen, "python %s: _Py_DebugOffsets failed validation (%s)", c->ver, detail);
	return -EPROTO;
}

/* Field word f of the block whose size is word s: off + width <= size. */
static int fits(struct check *c, const char *what, uint8_t s, uint8_t f, uint64_t width)
{
	uint64_t size = c->w[s], off = c->w[f];

	if (size < width || size > STRUCT_MAX)
		return bad(c, "%s: struct size %llu out of bounds", what, (unsigned long long)size);
	if (off > size - width)
		return bad(c, "%s: offset %llu outside a struct of %llu bytes", what, (unsigned long long)off,
			   (unsigned long long)size);
	return 0;
}

static int anchor(struct check *c, const char *what, uint8_t f, uint64_t want)
{
	if (c->w[f] != want)
		return bad(c, "%s is %llu, expected %llu", what, (unsigned long long)c->w[f], (unsigned long long)want);
	return 0;
}

static void version_name(uint64_t v, char *buf, size_t len)
{
	static const char lvl[] = { 'a', 'b', 'c' };
	unsigned l = (v >> 4) & 0xf;

	if (l >= 0xa && l <= 0xc)
		snprintf(buf, len, "%u.%u.%u%c%u", (unsigned)(v >> 24) & 0xff, (unsigned)(v >> 16) & 0xff,
			 (unsigned)(v >> 8) & 0xff, lvl[l - 0xa], (unsigned)v & 0xf);
	else
		snprintf(buf, len, "%u.%u.%u", (unsigned)(v >> 24) & 0xff, (unsigned)(v >> 16) & 0xff,
			 (unsigned)(v >> 8) & 0xff);
}

int cw_py_offsets_debug_parse(const uint8_t *buf, size_t len, uint64_t runtime_size, struct cw_py_offsets *out,
			      uint32_t *version_hex, char *why, size_t whylen)
{
	uint64_t w[96];
	const struct dbg_layout *L = NULL;
	const struct dbg_anchors *A;
	struct check c = { .w = w, .why = why, .whylen = whylen };
	char ver[32];
	int minor, err = 0;
	size_t i;

	*version_hex = 0;
	if (why && whylen)
		why[0] = '\0';
	if (len < 24 || memcmp(buf, "xdebugpy", 8) != 0) {
		if (why)
			snprintf(why, whylen, "no _Py_DebugOffsets (cookie \"xdebugpy\" missing)");
		return -EPROTO;
	}
	memset(w, 0, sizeof(w));
	memcpy(w, buf + 8, len - 8 < sizeof(w) ? len - 8 : sizeof(w));
	version_name(w[0], ver, sizeof(ver));
	c.ver = ver;
	if ((w[0] >> 32) || (w[0] >> 24) != 3) {
		if (why)
			snprintf(why, whylen, "_Py_DebugOffsets carries version 0x%llx, not a CPython 3 version",
				 (unsigned long long)w[0]);
		return -EPROTO;
	}
	*version_hex = (uint32_t)w[0];
	minor = (int)((w[0] >> 16) & 0xff);
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			L = &layouts[i];
	if (!L) {
		if (why)
			snprintf(why, whylen,
				 "python %s is not supported (its _Py_DebugOffsets layout is unknown; 3.10 to 3.15 are)",
				 ver);
		return -ENOTSUP;
	}
	if (len < 8 + (size_t)L->nwords * 8) {
		if (why)
			snprintf(why, whylen, "python %s: _Py_DebugOffsets truncated", ver);
		return -EPROTO;
	}
	if (w[1] > 1)
		return bad(&c, "free_threaded is %llu, expected 0 or 1", (unsigned long long)w[1]);
	if (w[1] && !L->fr_tlbc_index) {
		/* 3.13t: f_executable is a plain pointer but deferred and
		 * biased refcounts are half done; nothing here was checked
		 * against it. 3.14t is the first free-threaded minor read. */
		if (why)
			snprintf(why, whylen,
				 "python %s is a free-threaded build, which is supported from 3.14 (3.14t, 3.15t)", ver);
		return -ENOTSUP;
	}
	A = w[1] ? &anchors_free_threaded : &anchors_default;
	if (runtime_size && w[L->rt_size] != runtime_size)
		return bad(&c, "runtime size %llu, the _PyRuntime symbol has %llu bytes",
			   (unsigned long long)w[L->rt_size], (unsigned long long)runtime_size);
	err = err ?: fits(&c, "runtime interpreters_head", L->rt_size, L->rt_interp_head, 8);
	err = err ?: fits(&c, "interpreter next", L->is_size, L->is_next, 8);
	err = err ?: fits(&c, "interpreter threads_head", L->is_size, L->is_threads_head, 8);
	err = err ?: fits(&c, "thread current_frame", L->ts_size, L->ts_current_frame, 8);
	err = err ?: fits(&c, "thread thread_id", L->ts_size, L->ts_thread_id, 8);
	err = err ?: fits(&c, "thread native_thread_id", L->ts_size, L->ts_native_thread_id, 8);
	err = err ?: fits(&c, "frame instr_ptr", L->fr_size, L->fr_instr_ptr, 8);
	err = err ?: fits(&c, "frame owner", L->fr_size, L->fr_owner, 1);
	err = err ?: fits(&c, "code filename", L->co_size, L->co_filename, 8);
	err = err ?: fits(&c, "code name", L->co_size, L->co_name, 8);
	err = err ?: fits(&c, "code qualname", L->co_size, L->co_qualname, 8);
	err = err ?: fits(&c, "code linetable", L->co_size, L->co_linetable, 8);
	err = err ?: fits(&c, "code firstlineno", L->co_size, L->co_firstlineno, 4);
	err = err ?: fits(&c, "code co_code_adaptive", L->co_size, L->co_code_adaptive, 0);
	err = err ?: fits(&c, "type tp_name", L->tp_size, L->tp_name, 8);
	err = err ?: fits(&c, "bytes ob_sval", L->by_size, L->by_sval, 1);
	err = err ?: fits(&c, "str length", L->un_size, L->un_length, 8);
	err = err ?: fits(&c, "str state", L->un_size, L->un_state, 4);
	err = err ?: fits(&c, "str header", L->un_size, L->un_ascii, 0);
	/* anchors: unchanged from 3.13 through 3.15 (per object header) */
	err = err ?: anchor(&c, "PyObject size", L->ob_size, A->ob_size);
	err = err ?: anchor(&c, "PyObject ob_type", L->ob_type, A->ob_type);
	err = err ?: anchor(&c, "thread state next", L->ts_next, 8);
	err = err ?: anchor(&c, "thread state interp", L->ts_interp, 16);
	err = err ?: anchor(&c, "frame f_executable", L->fr_executable, 0);
	err = err ?: anchor(&c, "frame previous", L->fr_previous, 8);
	err = err ?: anchor(&c, "bytes ob_size", L->by_ob_size, A->by_ob_size);
	err = err ?: anchor(&c, "str length", L->un_length, A->un_length);
	err = err ?: anchor(&c, "str state", L->un_state, A->un_state);
	err = err ?: anchor(&c, "PyASCIIObject size", L->un_ascii, A->un_ascii);
	err = err ?: anchor(&c, "type tp_name", L->tp_name, A->tp_name);
	if (!err && w[1]) {
		/* thread-local bytecode: the frame's index and the code's array */
		err = fits(&c, "frame tlbc_index", L->fr_size, L->fr_tlbc_index, 4);
		err = err ?: fits(&c, "code co_tlbc", L->co_size, L->co_tlbc, 8);
		if (!err && (w[L->fr_tlbc_index] < w[L->fr_previous] + 8 || w[L->co_tlbc] < w[L->co_linetable] + 8 ||
			     w[L->co_code_adaptive] < w[L->co_tlbc] + 8))
			err = bad(&c, "frame tlbc_index (%llu) or code co_tlbc (%llu) overlaps a field",
				  (unsigned long long)w[L->fr_tlbc_index], (unsigned long long)w[L->co_tlbc]);
	}
	if (err)
		return err;
	if (w[L->co_code_adaptive] < w[L->co_linetable] + 8 || w[L->by_sval] < w[L->by_ob_size] + 8)
		return bad(&c, "inline data of code (%llu) or bytes (%llu) overlaps a field",
			   (unsigned long long)w[L->co_code_adaptive], (unsigned long long)w[L->by_sval]);

	memset(out, 0, sizeof(*out));
	out->version_hex = (uint32_t)w[0];
	out->minor = minor;
	out->frame_kind = CW_PY_FRAME_INTERP;
	out->rt_interp_head = (uint32_t)w[L->rt_interp_head];
	out->is_next = (uint32_t)w[L->is_next];
	out->is_threads_head = (uint32_t)w[L->is_threads_head];
	out->ts_next = (uint32_t)w[L->ts_next];
	out->ts_interp = (uint32_t)w[L->ts_interp];
	out->ts_thread_id = (uint32_t)w[L->ts_thread_id];
	out->ts_native_thread_id = (int32_t)w[L->ts_native_thread_id];
	out->ts_frame = (uint32_t)w[L->ts_current_frame];
	out->cframe_current = -1;
	out->fr_back = (uint32_t)w[L->fr_previous];
	out->fr_code = (uint32_t)w[L->fr_executable];
	out->fr_lasti = (uint32_t)w[L->fr_instr_ptr];
	out->fr_owner = (int32_t)w[L->fr_owner];
	out->co_filename = (uint32_t)w[L->co_filename];
	out->co_name = (uint32_t)w[L->co_name];
	out->co_qualname = (uint32_t)w[L->co_qualname];
	out->co_firstlineno = (uint32_t)w[L->co_firstlineno];
	out->co_linetable = (uint32_t)w[L->co_linetable];
	out->co_code_adaptive = (uint32_t)w[L->co_code_adaptive];
	out->ob_type = (uint32_t)w[L->ob_type];
	out->tp_name = (uint32_t)w[L->tp_name];
	out->var_size = (uint32_t)w[L->by_ob_size];
	out->bytes_sval = (uint32_t)w[L->by_sval];
	out->unicode_state = (uint32_t)w[L->un_state];
	out->unicode_length = (uint32_t)w[L->un_length];
	out->ascii_size = (uint32_t)w[L->un_ascii];
	/* 3.13+ read the current thread from static TLS (_Py_tss_tstate);
	 * the autoTSSkey is still kept in _PyRuntime but not published. */
	out->autotss_key = 0;
	/* 3.14+: f_executable is a _PyStackRef whose low bits are tags
	 * (Py_TAG_REFCNT, and on 3.15 the tagged-int bits); objects are
	 * at least 8-byte aligned, so clearing three bits is exact. */
	out->code_mask = minor >= 14 ? ~7ull : ~0ull;
	/* Free-threaded: code objects use deferred refcounting, so their
	 * f_executable always carries Py_TAG_DEFERRED (bit 0), which the
	 * mask above clears; strings keep interned in a byte of its own. */
	out->free_threaded = (int)w[1];
	out->fr_tlbc_index = w[1] ? (int32_t)w[L->fr_tlbc_index] : -1;
	out->co_tlbc = w[1] ? (uint32_t)w[L->co_tlbc] : 0;
	out->str_kind_shift = w[1] ? 8 : 2;
	return 0;
}

int cw_py_offsets_debug(struct cw_rmem *m, uint64_t runtime_addr, uint64_t runtime_size, struct cw_py_offsets *out,
			uint32_t *version_hex, char *why, size_t whylen)
{
	uint8_t buf[CW_PY_DEBUG_OFFSETS_READ];
	size_t want = sizeof(buf);
	int err;

	*version_hex = 0;
	/* a runtime smaller than the read (only ever fake memory) is read whole */
	if (runtime_size && runtime_size < want)
		want = (size_t)runtime_size;
	err = cw_rmem_read(m, runtime_addr, buf, want);
	if (err) {
		if (why)
			snprintf(why, whylen, "cannot read _Py_DebugOffsets (%s)", strerror(-err));
		return err;
	}
	return cw_py_offsets_debug_parse(buf, want, runtime_size, out, version_hex, why, whylen);
}
