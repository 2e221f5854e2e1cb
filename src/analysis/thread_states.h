/* Every thread's state of a process as trace stored it: the detail JSON
 * of a live stall event (source 'stall') or of the end-of-trace snapshot
 * (source 'threads', op 'end_of_trace'), docs/schema.md. Read back into
 * struct cw_chain_thread (analysis/chain.h) for training_stall and the
 * nccl_hang wavefront, with what each thread was blocked in named by one
 * vocabulary (docs/rules.md "Blocking kinds"). */
#ifndef CW_ANALYSIS_THREAD_STATES_H
#define CW_ANALYSIS_THREAD_STATES_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

#include "analysis/chain.h"

/* A runnable thread counts as starved when it was preempted for at least
 * this share of the second before the states were taken. */
#define CW_STARVED_SHARE 0.5

/* The blocking kind of a thread from trace's wait class
 * (gpu/threadstate.h) and, for a runnable one, whether it was starved:
 * "pipe", "socket", "futex", "disk", "file", "sleep", "poll", "child",
 * "gpu_driver", "cuda_call", "running", "runnable_starved", "stopped",
 * "exited", "other". */
const char *cw_blocked_kind(const char *wait, int starved);

/* Parses one stored detail's "threads" array into out (at most max, the
 * thread tid_first first); *total: how many the array held. Returns the
 * count kept. Hostile input: every field is bounded and optional. */
int cw_threads_from_detail(const json_t *detail, int64_t tid_first, struct cw_chain_thread *out, int max,
			   int *total);

/* The newest stored thread states of pid on node among the event rows
 * with id >= min_id: from the end-of-trace snapshot or a live stall event
 * (from: "end_of_trace" or "stall"; "" and 0 returned when none). A
 * runnable thread is marked runnable_starved from its preempted off-CPU
 * time in the second before. Returns the count or -errno. */
int cw_stored_threads(sqlite3 *db, const char *node, int64_t pid, int64_t min_id, int64_t tid_first,
		      struct cw_chain_thread *out, int max, int *total, char *from, size_t from_len);

/* Marks runnable threads of out as runnable_starved from the off-CPU rows
 * of the second before mono_ns. */
int cw_threads_mark_starved(sqlite3 *db, const char *node, uint64_t mono_ns, struct cw_chain_thread *out, int n);

/* "thread 12 (python) blocked in read on a pipe (pipe:[123]) at train.py:42 in step". */
void cw_chain_thread_text(const struct cw_chain_thread *t, char *buf, size_t len);
/* {tid, comm, state, blocked_in, syscall, target, wchan, in_call, in_call_ns, python}; null where unknown. */
json_t *cw_chain_thread_json(const struct cw_chain_thread *t);

#endif
