#include "pyframe/framewalk.h"

#include <errno.h>
#include <string.h>

#include "pyframe/pycode.h"

/* The innermost frame of a thread state (following cframe on 3.11/3.12).
 * Returns 0 with *frame = 0 for an idle thread, or -errno. */
static int cw_py_current_frame(struct cw_py_proc *p, uint64_t tstate, uint64_t *frame)
{
	uint64_t f;
	int err;

	*frame = 0;
	err = cw_rmem_read_u64(&p->mem, tstate + p->off.ts_frame, &f);
	if (err)
		return err;
	if (f && p->off.cframe_current >= 0) {
		/* 3.11/3.12: tstate->cframe points at a _PyCFrame on the C stack */
		if (!cw_rmem_ptr_ok(f))
			return -EFAULT;
		err = cw_rmem_read_u64(&p->mem, f + (uint64_t)p->off.cframe_current, &f);
		if (err)
			return err;
	}
	if (f && (!cw_rmem_ptr_ok(f) || (f & 7)))
		return -EFAULT;
	*frame = f;
	return 0;
}

static uint32_t thread_tid(struct cw_py_proc *p, uint64_t ts)
{
	uint64_t v;
	uint32_t tid;

	if (p->off.ts_native_thread_id >= 0) {
		if (cw_rmem_read_u64(&p->mem, ts + (uint64_t)p->off.ts_native_thread_id, &v) || v > INT32_MAX)
			return 0;
		return (uint32_t)v;
	}
	if (p->pthread_tid_off < 0 || cw_rmem_read_u64(&p->mem, ts + p->off.ts_thread_id, &v) ||
	    !cw_rmem_ptr_ok(v) || cw_rmem_read(&p->mem, v + (uint64_t)p->pthread_tid_off, &tid, sizeof(tid)))
		return 0;
	return tid <= INT32_MAX ? tid : 0;
}

int cw_py_threads(struct cw_py_proc *p, struct cw_py_thread *out, int max)
{
	uint64_t interp, ts;
	int n = 0, ninterp = 0, err;

	err = cw_rmem_read_ptr(&p->mem, p->runtime + p->off.rt_interp_head, &interp);
	if (err)
		return err;
	while (interp && ninterp++ < 256) {
		int nts = 0;

		err = cw_rmem_read_u64(&p->mem, interp + p->off.is_threads_head, &ts);
		if (err)
			return n ? n : err;
		while (ts && n < max) {
			uint64_t back;
			int i, seen = 0;

			if (!cw_rmem_ptr_ok(ts) || (ts & 7))
				return n ? n : -EFAULT;
			for (i = 0; i < n; i++)
				if (out[i].tstate == ts)
					seen = 1;
			if (seen)
				return n; /* cycle: a list being edited, or corruption */
			/* tstate->interp must point back: the cheap proof that the
			 * offsets and the pointer are what we think they are */
			if (cw_rmem_read_u64(&p->mem, ts + p->off.ts_interp, &back) || back != interp)
				return n ? n : -EPROTO;
			out[n].tstate = ts;
			out[n].interp = interp;
			out[n].tid = cw_py_proc_host_tid(p, thread_tid(p, ts));
			if (cw_py_current_frame(p, ts, &out[n].frame))
				out[n].frame = 0;
			n++;
			if (++nts > CW_PY_MAX_THREADS || cw_rmem_read_u64(&p->mem, ts + p->off.ts_next, &ts))
				break;
		}
		if (n >= max || cw_rmem_read_u64(&p->mem, interp + p->off.is_next, &interp))
			break;
		if (interp && !cw_rmem_ptr_ok(interp))
			break;
	}
	return n;
}

/* Where the frame's bytecode starts: the code object's inline copy, or on
 * free-threaded builds (3.14t+) the thread-local copy the frame runs,
 * co_tlbc->entries[tlbc_index] (pycore_interpframe.h _PyFrame_GetBytecode).
 * *base = 0 when the index or the array is out of bounds. */
static int frame_bytecode(struct cw_py_proc *p, uint64_t frame, uint64_t code, uint64_t *base)
{
	uint64_t tlbc, size;
	int32_t idx;
	int err;

	*base = code + p->off.co_code_adaptive;
	if (p->off.fr_tlbc_index < 0)
		return 0;
	err = cw_rmem_read(&p->mem, frame + (uint64_t)p->off.fr_tlbc_index, &idx, sizeof(idx));
	if (err || idx == 0)
		return err; /* entry 0 is always the inline copy */
	*base = 0;
	err = cw_rmem_read_u64(&p->mem, code + p->off.co_tlbc, &tlbc);
	if (err)
		return err;
	if (idx < 0 || !cw_rmem_ptr_ok(tlbc) || (tlbc & 7))
		return 0;
	err = cw_rmem_read_u64(&p->mem, tlbc, &size);
	if (err || size > CW_PY_TLBC_MAX || (uint64_t)idx >= size)
		return err;
	err = cw_rmem_read_u64(&p->mem, tlbc + 8 + 8 * (uint64_t)idx, base);
	if (!err && !cw_rmem_ptr_ok(*base))
		*base = 0;
	return err;
}

static int frame_lasti(struct cw_py_proc *p, uint64_t frame, uint64_t code, int64_t *lasti)
{
	if (p->off.frame_kind == CW_PY_FRAME_OBJECT) {
		int32_t l;
		int err = cw_rmem_read(&p->mem, frame + p->off.fr_lasti, &l, sizeof(l));

		/* 3.10 f_lasti counts code units already (-1: not started) */
		*lasti = err ? -1 : l;
		return err;
	}
	uint64_t ip, base;
	int err = cw_rmem_read_u64(&p->mem, frame + p->off.fr_lasti, &ip);

	err = err ?: frame_bytecode(p, frame, code, &base);
	if (err)
		return err;
	if (!base) {
		*lasti = -1; /* a thread-local copy that cannot be found */
		return 0;
	}
	/* 3.11/3.12 prev_instr, 3.13 instr_ptr: a pointer into the code
	 * object's inline bytecode; prev_instr is one unit before the first
	 * instruction when the frame has not started yet. */
	if (ip < base)
		*lasti = -1;
	else if ((ip - base) / 2 > (1u << 24))
		return -EINVAL;
	else
		*lasti = (int64_t)((ip - base) / 2);
	return 0;
}

int cw_py_walk(struct cw_py_proc *p, uint64_t frame, struct cw_py_frame *frames, int max, int *truncated)
{
	uint64_t seen[CW_PY_WALK_MAX];
	int n = 0, nseen = 0, i;

	*truncated = 0;
	while (frame) {
		uint64_t code = 0, next = 0;
		int64_t lasti = -1;
		int skip = 0, err;

		if (!cw_rmem_ptr_ok(frame) || (frame & 7))
			return n ? n : -EFAULT;
		for (i = 0; i < nseen; i++)
			if (seen[i] == frame)
				return n ? n : -ELOOP;
		if (nseen == CW_PY_WALK_MAX) {
			*truncated = 1;
			return n;
		}
		seen[nseen++] = frame;
		if (p->off.fr_owner >= 0) {
			uint8_t owner;

			err = cw_rmem_read(&p->mem, frame + (uint64_t)p->off.fr_owner, &owner, 1);
			if (err)
				return n ? n : err;
			skip = owner >= CW_PY_OWNED_BY_CSTACK;
		}
		err = cw_rmem_read_u64(&p->mem, frame + p->off.fr_code, &code);
		err = err ?: cw_rmem_read_u64(&p->mem, frame + p->off.fr_back, &next);
		if (err)
			return n ? n : err;
		code &= p->off.code_mask; /* 3.14+: a tagged _PyStackRef */
		if (!skip) {
			int is = cw_py_is_code(p, code);

			if (is < 0)
				return n ? n : is;
			skip = !is; /* 3.13+: f_executable may be None or a non-code object */
		}
		if (!skip) {
			if (n == max) {
				*truncated = 1;
				return n;
			}
			err = frame_lasti(p, frame, code, &lasti);
			if (err)
				return n ? n : err;
			frames[n].code = code;
			frames[n].lasti = lasti < 0 ? UINT32_MAX : (uint32_t)lasti;
			frames[n].pad = 0;
			n++;
		}
		frame = next;
	}
	return n;
}
