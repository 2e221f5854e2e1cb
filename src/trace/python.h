/* The Python and native stack side of `causeway trace`.
 *
 * BPF walks a Python thread's frames at each call entry only for processes
 * registered in its maps (src/bpf/pystack.bpf.h). This module registers
 * every traced process that runs CPython, keeps its thread map current, and
 * provides the pipeline with the resolver (code object -> file, function,
 * executing line) and the native symbolizer.
 *
 * Threads: enroll/exec_seen/exited may be called from the consumer thread
 * with the consumer lock held; poll runs in the main thread without it and
 * takes the lock only to copy the work list; forget_exited runs with the
 * lock held (the resolver and symbolizer are used under it). */
#ifndef CW_TRACE_PYTHON_H
#define CW_TRACE_PYTHON_H

#include <stdint.h>

#include "loader/uprobe_attach.h"
#include "pipeline/pipeline.h"
#include "loader/ringbuf.h"
#include "trace/trace.h"

struct trace_python;

/* A process seen by poll that ended without Python stacks, or with them. */
struct trace_python_stats {
	uint64_t attached;    /* processes whose Python stacks are captured */
	uint64_t unsupported; /* CPython processes that cannot be captured (reason reported) */
	uint64_t threads;     /* thread states currently mapped */
	/* Native stacks stored with raw addresses: the symbolizing thread
	 * passed its deadline on them, or was still held by a file. */
	uint64_t native_stalled, native_skipped;
};

/* py_stacks 0: the resolver and symbolizer are still provided (demo-like
 * stored stacks resolve), but no process is registered for capture. Each
 * process's capture (or why not) is said through say, unless json. */
int trace_python_new(struct trace_python **out, struct cw_cuda_probes *cp, struct cw_consumer *cons,
		     int py_stacks, int json, const struct cw_trace_sink *say);
void trace_python_free(struct trace_python *tp);

const struct cw_py_resolver *trace_python_resolver(struct trace_python *tp);
const struct cw_symbolizer *trace_python_symbolizer(struct trace_python *tp);

/* A process is now traced, or exec'd a new image: try to register it
 * (again) from the next poll on. Consumer lock held. */
void trace_python_enroll(struct trace_python *tp, uint32_t pid);
/* A process exited: its cached code objects and maps are dropped a little
 * later, once its last records have been read. Consumer lock held. */
void trace_python_exited(struct trace_python *tp, uint32_t pid);

/* Main thread, often: registers pending processes, and refreshes thread
 * maps every refresh interval (more often for a process just registered).
 * Lock not held. */
void trace_python_poll(struct trace_python *tp, uint64_t now_ns);
/* Main thread: how long the main loop may wait before the next poll has
 * work, at most longest_ns. Takes the consumer lock. */
uint64_t trace_python_wait_ns(struct trace_python *tp, uint64_t now_ns, uint64_t longest_ns);
/* Readable when an enrollment wants a poll sooner than the main loop's
 * wait: the loop polls it (and drains it) in place of sleeping; -1 when
 * capture is off. trace_python_wake signals it (any thread). */
int trace_python_wake_fd(struct trace_python *tp);
void trace_python_wake(struct trace_python *tp);
/* Consumer lock held: drops what was cached for processes that exited
 * more than a grace period ago. */
void trace_python_forget_exited(struct trace_python *tp, uint64_t now_ns);

void trace_python_get_stats(struct trace_python *tp, struct trace_python_stats *out);

#endif
