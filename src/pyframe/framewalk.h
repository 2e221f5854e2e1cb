/* Walking a Python process's threads and frames from outside.
 *
 * The fallback to the in-BPF capture, and what `causeway where` uses. The
 * walk is bounded (a cap on threads, on frames, and cycle detection), and
 * every pointer read from the target is validated before it is followed:
 * a corrupt or racing chain ends the walk with an error or a truncated
 * result, never a crash or a loop. */
#ifndef CW_PYFRAME_FRAMEWALK_H
#define CW_PYFRAME_FRAMEWALK_H

#include <stdint.h>

#include "bpf/events.h"
#include "pyframe/pyproc.h"

#define CW_PY_MAX_THREADS 1024
#define CW_PY_WALK_MAX 256 /* frames per thread for where; BPF keeps CW_PY_MAX_FRAMES */

struct cw_py_thread {
	uint64_t tstate;
	uint64_t interp;
	uint32_t tid;   /* kernel TID, 0 when unknown */
	uint64_t frame; /* innermost frame, 0 when the thread runs no Python */
};

/* Lists the thread states of every interpreter (subinterpreters too).
 * Returns the count (<= max), or -errno when the list cannot be read;
 * a cycle stops the walk with what was found so far. */
int cw_py_threads(struct cw_py_proc *p, struct cw_py_thread *out, int max);

/* Walks the frame chain from frame, innermost first, into frames[]:
 * code object address and instruction offset in code units (the same
 * pairs BPF captures). Shim frames (owned by the C stack, 3.12+) and
 * frames whose executable is not a code object (3.13) are skipped.
 * Returns the count; *truncated is set when the chain was longer than max.
 * -EFAULT / -ELOOP / -EINVAL when the chain is corrupt before any frame. */
int cw_py_walk(struct cw_py_proc *p, uint64_t frame, struct cw_py_frame *frames, int max, int *truncated);

#endif
