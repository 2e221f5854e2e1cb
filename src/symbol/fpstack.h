/* Native stacks of a live process for `causeway where`: stop every thread
 * with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT: no signal is delivered to
 * the target), read its registers, walk the frame-pointer chain, resume.
 *
 * Frame pointers are the only unwinder here: code built without them
 * (pyenv's CPython, most distributions' libraries) yields a short stack,
 * because the walk stops at the first frame pointer that does not point
 * further up the same stack; it never invents frames. */
#ifndef CW_SYMBOL_FPSTACK_H
#define CW_SYMBOL_FPSTACK_H

#include <stdint.h>
#include <sys/types.h>

#include "util/rmem.h"

#define CW_FP_MAX_TIDS 1024

struct cw_stopped {
	pid_t pid;
	int n;
	pid_t tids[CW_FP_MAX_TIDS];
	char held[CW_FP_MAX_TIDS]; /* 1 when this thread is stopped by us */
	/* a signal that arrived before our interrupt (its delivery stop is
	 * the one held): handed back at detach, never swallowed */
	unsigned char sig[CW_FP_MAX_TIDS];
};

/* Lists the threads of pid and stops those it can. Returns the number
 * stopped (>= 0), or -errno (-ESRCH gone, -EPERM not allowed or already
 * traced) when none could be; the thread list is filled either way. */
int cw_threads_stop(pid_t pid, struct cw_stopped *s);
/* Resumes and detaches every thread stopped by cw_threads_stop. */
void cw_threads_resume(struct cw_stopped *s);

/* Registers of a stopped thread and the walk above, with stack_end taken
 * from the mapping that holds sp. Returns the count or -errno. */
int cw_thread_native_stack(pid_t pid, pid_t tid, struct cw_rmem *m, uint64_t *ips, int max);

#endif
