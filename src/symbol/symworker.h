/* Native stacks symbolized on a thread of their own, with a deadline.
 *
 * Naming a frame opens the traced process's mapped file and reads its
 * symbol table. The process chooses what backs that file: one served by a
 * FUSE mount it runs can make the open or the read wait forever, and on
 * the thread that drains the ring buffers that wedged the whole trace (no
 * --duration, no stop, every ring dropping). Here the cw_symz lives on a
 * worker thread; the caller waits for a stack at most the deadline. Past
 * it the stack is stored with raw addresses, and while the worker is still
 * held by that file, every later stack is too, at once, and counted. The
 * worker takes stacks again once the file answers.
 *
 * One caller thread at a time (the pipeline's, under the consumer lock);
 * forget may come from any thread. */
#ifndef CW_SYMBOL_SYMWORKER_H
#define CW_SYMBOL_SYMWORKER_H

#include <stddef.h>
#include <stdint.h>

#include "symbol/frames.h"

struct cw_symworker;

struct cw_symworker_stats {
	uint64_t stacks;  /* stacks named */
	uint64_t stalled; /* stacks the deadline passed on */
	uint64_t skipped; /* stacks not tried: the worker was still held */
};

int cw_symworker_new(struct cw_symworker **out, uint64_t deadline_ns);
/* A worker still held by a file is left behind (it holds only its own
 * state, freed with the process). */
void cw_symworker_free(struct cw_symworker *w);
/* Its symbolize_stack (frames.h), for the pipeline. */
void cw_symworker_as_symbolizer(struct cw_symworker *w, struct cw_symbolizer *out);
/* Drops the cached map of pid (it exited), before the worker's next stack. */
void cw_symworker_forget(struct cw_symworker *w, uint32_t pid);
void cw_symworker_get_stats(struct cw_symworker *w, struct cw_symworker_stats *out);

#endif
