/* A trace's end: discovery and the launched command stopped, the last
 * records drained from the rings into the store (waiting out a write lock
 * for what is left of --lock-wait), calls still open stored unfinished. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "trace/chains.h"
#include "trace/gpu.h"
#include "trace/ras.h"
#include "trace/session.h"
#include "trace/tenant.h"
#include "util/timeutil.h"

void trace_drain(struct trace *t, struct cw_trace_result *res)
{
	int failed = 0;

	/* What every traced process's threads are doing now, before the
	 * launched command is stopped: a hang or stall read later names what
	 * each thread was blocked in (its last off-CPU interval never ends
	 * inside the trace). */
	/* A RAS query still in flight is given up at once, outside the lock
	 * (a listener that never answers must not hold the stop up). */
	trace_ras_abandon(t->ras);
	cw_consumer_lock(&t->cons);
	trace_gpu_end_snapshot(t->gpu, cw_monotonic_ns());
	/* Its answer (or the giving up) is stored with the rest. */
	trace_ras_finish(t->ras);
	cw_consumer_unlock(&t->cons);
	/* Nothing stays stopped past this point. */
	trace_live_stop(t);
	if (t->child > 0 && !t->child_done) {
		kill(t->child, SIGTERM);
		waitpid(t->child, &t->status, 0);
		t->child_done = 1;
	}
	/* The telemetry thread writes under the consumer lock: halted before
	 * the drain so its last rows are in the final flush. */
	trace_gpu_halt(t->gpu);
	/* Let records of the last calls reach the rings before the drain. */
	{
		struct timespec ts = { 0, 50 * 1000000L };

		nanosleep(&ts, NULL);
	}
	cw_consumer_lock(&t->cons);
	cw_kernel_probes_flush(t->kp, 1);
	cw_consumer_unlock(&t->cons);
	if (!t->lock_failed)
		trace_wait_for_store(t);
	if (cw_consumer_stop(&t->cons))
		failed = 1;
	cw_consumer_lock(&t->cons);
	if (t->cons.held || cw_consumer_spool_records(&t->cons)) {
		/* Still locked: what was held is lost, and counted. */
		t->lock_failed = 1;
		cw_consumer_spool_discard(&t->cons);
	}
	cw_consumer_unlock(&t->cons);
	/* Calls still open (a hung collective, a long synchronize) are stored
	 * as unfinished with how long they had run by now. */
	if (!t->lock_failed)
		trace_take_inflight(t, UINT64_MAX);
	/* Cgroups first seen in the last second are named too. */
	trace_tenant_finish(t->tenant);
	cw_consumer_lock(&t->cons);
	if (!t->lock_failed)
		trace_fold_tick(t, trace_measure_offset(), 1);
	if (!t->lock_failed && cw_pipeline_finish(t->pipe, cw_monotonic_ns()))
		failed = 1;
	cw_consumer_unlock(&t->cons);
	/* The last stretch's chains, with the rows they rest on still there. */
	if (!failed && !t->lock_failed)
		trace_chains_pass(t, cw_realtime_ns(), CW_TRACE_CHAINS_END);
	trace_report_end(t, failed, res);
}
