/* A trace's main loop: until a stop signal, --duration (counted from the
 * "attached" line), the launched command's exit or the end of every
 * --pid, a rescan and the counters every second, Python enrolment as
 * soon as a process is enrolled (at most 100 ms apart otherwise). */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loader/discover.h"
#include "metrics/writer_lag.h"
#include "trace/chains.h"
#include "trace/gpu.h"
#include "trace/inference.h"
#include "trace/ras.h"
#include "trace/python.h"
#include "trace/session.h"
#include "trace/view.h"
#include "util/timeutil.h"

static volatile sig_atomic_t stop_signal, chains_asked;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* SIGUSR1: a chains pass now (docs/trace.md, "Chains while tracing"). */
static void on_chains_signal(int sig)
{
	(void)sig;
	chains_asked = 1;
}

static void tick(struct trace *t)
{
	struct cw_snapshot snap;
	struct loss_totals lt;
	uint64_t now = cw_monotonic_ns();

	trace_rescan(t);
	if (now > t->cons.max_open_ns)
		trace_take_inflight(t, now - t->cons.max_open_ns);
	if (t->si && !cw_sysinfo_sample(t->si, &snap))
		cw_consumer_feed(&t->cons, &snap, sizeof(snap));
	cw_consumer_lock(&t->cons);
	{
		int64_t off = trace_measure_offset();

		cw_pipeline_set_clock(t->pipe, off);
		trace_fold_tick(t, off, 0);
	}
	trace_python_forget_exited(t->py, cw_monotonic_ns());
	cw_kernel_probes_flush(t->kp, 0);
	{
		uint64_t cs[CW_CS_MAX];
		trace_gpu_tick(t->gpu, now, cw_cuda_probes_stats(t->cp, cs) ? 0 : cs[CW_CS_AGGREGATED]);
	}
	trace_ras_tick(t->ras);
	trace_store_counters(t, &lt);
	trace_watch_store(t, &lt);
	if (t->wlag)
		cw_writer_lag_commits(t->wlag, trace_writer_commits_locked(t), cw_monotonic_ns());
	if (t->view_on) {
		struct cw_trace_view_status vs = {
			.elapsed_ns = cw_monotonic_ns() - t->traced_from_ns,
			.nprocs = t->nknown,
			.nlibs = cw_cuda_probes_nlibs(t->cp),
			.nprobes = cw_cuda_probes_npairs(t->cp),
			.ring_drops = lt.ring_drops,
			.aggregated = lt.aggregated,
			.pipeline_losses = lt.pipeline,
			.store_failed = lt.store_failed,
			.held_dropped = lt.held_dropped,
			.store_problem = trace_store_problem(lt.store_error),
			.held_ns = t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0,
			.held_records = cw_consumer_spool_records(&t->cons),
			.held_limit_ns = t->o.lock_wait_ns,
			.db = t->o.db,
		};

		cw_trace_view_render(t->view, t->o.view_out, &vs, 1);
	}
	cw_consumer_unlock(&t->cons);
}

static int any_alive(const struct trace *t)
{
	int i;

	for (i = 0; i < t->o.npids; i++)
		if (cw_pid_exists(t->o.pids[i]))
			return 1;
	return 0;
}

/* Up to 100 ms, less when a Python process is due for a try, and cut
 * short by an enrollment (an exec or fork to try at once) or a signal. */
static void wait_for_work(struct trace *t)
{
	struct pollfd pf = { .fd = trace_python_wake_fd(t->py), .events = POLLIN };
	uint64_t wait = trace_python_wait_ns(t->py, cw_monotonic_ns(), 100 * 1000000ULL), drained;

	if (poll(&pf, 1, (int)((wait + 999999) / 1000000)) > 0 && (pf.revents & POLLIN) &&
	    read(pf.fd, &drained, sizeof(drained)) < 0) {
		/* EAGAIN: another reader cannot exist; nothing to drain */
	}
}

void trace_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_chains_signal;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void trace_loop(struct trace *t)
{
	uint64_t last_tick;

	last_tick = cw_monotonic_ns();
	while (!stop_signal) {
		uint64_t now;

		wait_for_work(t);
		now = cw_monotonic_ns();
		trace_python_poll(t->py, now);
		trace_inference_poll(t->inf, now);
		if (t->o.capture_summary) {
			cw_consumer_lock(&t->cons);
			trace_fold_thresholds(t);
			cw_consumer_unlock(&t->cons);
		}
		if (t->child > 0 && waitpid(t->child, &t->status, WNOHANG) == t->child) {
			t->child_done = 1;
			break;
		}
		if (t->o.duration_ns && now - t->traced_from_ns >= t->o.duration_ns)
			break;
		if (now - last_tick >= NSEC_PER_SEC) {
			last_tick = now;
			tick(t);
			if (t->lock_failed)
				break;
			trace_chains_pass(t, cw_realtime_ns(), CW_TRACE_CHAINS_DUE);
			if (t->o.npids && !t->o.command && !any_alive(t))
				break;
		}
		if (chains_asked) {
			chains_asked = 0;
			trace_chains_pass(t, cw_realtime_ns(), CW_TRACE_CHAINS_NOW);
		}
	}
	t->traced_to_ns = cw_monotonic_ns();
	cw_consumer_lock(&t->cons);
	cw_writer_counter_set(t->w, "trace.traced_ms", (t->traced_to_ns - t->traced_from_ns) / 1000000);
	cw_consumer_unlock(&t->cons);
}
