/* Threads without Python frames: a CUDA or NCCL call made on a native
 * thread of a Python process (PyTorch's autograd engine, a pin-memory or
 * watchdog thread, a C extension's worker) is attributed to the Python
 * stack of the thread that waits on it at that moment.
 *
 * The rule (docs/python.md, "Threads without Python frames"): among the
 * process's Python threads other than the caller that hold a Python frame,
 * the ones blocked in futex(2) (a lock, condition variable or join that the
 * native work will release: the GIL is dropped around such waits) are
 * waiting on it; the main thread is preferred, then the lowest TID. A call
 * from a thread that has Python frames of its own is never attributed. */
#ifndef CW_PYFRAME_ATTRIBUTE_H
#define CW_PYFRAME_ATTRIBUTE_H

#include <stdint.h>

#include "pyframe/framewalk.h"

/* Whether thread tid of pid is blocked in futex(2) now (1), not (0). */
typedef int (*cw_py_blocked_fn)(uint32_t pid, uint32_t tid);

/* The /proc/PID/task/TID/syscall reader used live. */
int cw_py_blocked_in_futex(uint32_t pid, uint32_t tid);

/* Index into th[0..nt) of the thread waiting on caller by the rule, -1 when
 * none qualifies, -2 when the caller has Python frames itself. */
int cw_py_waiting_thread(uint32_t pid, uint32_t caller, const struct cw_py_thread *th, int nt,
			 cw_py_blocked_fn blocked);

#endif
