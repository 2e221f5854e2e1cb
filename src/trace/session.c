/* A trace session from start to end: the start-up steps, the loop, the
 * drain, and the release of everything the steps made. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader/session.h"
#include "metrics/live_metrics.h"
#include "metrics/writer_lag.h"
#include "trace/inference.h"
#include "trace/ras.h"
#include "trace/gpu.h"
#include "trace/python.h"
#include "trace/chains.h"
#include "trace/session.h"
#include "trace/tenant.h"
#include "trace/view.h"
#include "util/timeutil.h"

struct trace *trace_session_new(const struct cw_trace_opts *o, const struct cw_trace_hooks *h)
{
	struct trace *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->o = *o;
	t->hooks = h;
	pthread_mutex_init(&t->attach_lock, NULL);
	t->stats_fd = -1;
	t->gate_fd = -1;
	t->start_ns = cw_monotonic_ns();
	t->start_wall_ns = cw_realtime_ns();
	return t;
}

/* Says why a step failed, once: its own words, else the table's. */
static void say_failure(struct trace *t, const struct trace_step *s, int rc, const char *err)
{
	if (err[0])
		cw_trace_fail(&t->o.say, "%s", err);
	else if (s->what && s->with_errno)
		cw_trace_fail(&t->o.say, "%s: %s", s->what, strerror(-rc));
	else if (s->what)
		cw_trace_fail(&t->o.say, "%s", s->what);
	else if (!t->hook_exit) /* a hook said why itself */
		cw_trace_fail(&t->o.say, "cannot start tracing: %s", strerror(-rc));
}

int trace_steps_run(struct trace *t, const struct trace_step *steps, int n, struct cw_trace_result *res)
{
	char err[1024];
	int i, rc;

	for (i = 0; i < n; i++) {
		err[0] = '\0';
		rc = steps[i].run(t, err, sizeof(err));
		if (!rc)
			continue;
		if (rc > 0)
			rc = -EIO;
		say_failure(t, &steps[i], rc, err);
		res->step = steps[i].id;
		res->err = rc;
		res->hook_exit = t->hook_exit;
		return -1;
	}
	return 0;
}

/* Stops what serves or exports the session's figures, then the figures. */
static void stop_services(struct trace *t)
{
	const struct cw_trace_hooks *h = t->hooks;

	if (h && h->serve_stop && t->o.serve)
		h->serve_stop(h->ctx);
	cw_writer_lag_free(t->wlag);
	if (h && h->otlp_stop)
		h->otlp_stop(h->ctx, t->otlp);
	if (t->stats_fd >= 0)
		close(t->stats_fd);
	cw_live_metrics_free(t->metrics);
}

/* The disk filled: the last batch, the counters that say what was lost,
 * goes into the room set aside at start. A batch that still fails (rows
 * queued since the last commit, counted as failed with it) leaves the
 * counters alone for one more. */
static void store_losses_on_full_disk(struct trace *t)
{
	struct cw_writer_stats ws;

	if (!t->w || !t->reserve.held)
		return;
	cw_writer_get_stats(t->w, &ws);
	if (!ws.failing || ws.last_error != -ENOSPC)
		return;
	cw_store_reserve_release(&t->reserve);
	if (cw_writer_flush(t->w))
		cw_writer_flush(t->w);
}

void trace_session_end(struct trace *t, struct cw_trace_result *res)
{
	trace_live_stop(t);
	if (t->gate_fd >= 0)
		close(t->gate_fd); /* the child reads EOF and exits 126 */
	if (t->child > 0 && !t->child_done) {
		kill(t->child, SIGKILL);
		waitpid(t->child, NULL, 0);
	}
	/* The resolver writes through the writer: stopped before it goes. */
	trace_tenant_finish(t->tenant);
	if (t->cons.running)
		cw_consumer_stop(&t->cons);
	if (t->rb)
		ring_buffer__free(t->rb);
	cw_pipeline_free(t->pipe);
	trace_python_free(t->py); /* before the probes: it clears their maps */
	trace_gpu_stop(t->gpu); /* before the writer: it writes with it */
	trace_inference_stop(t->inf); /* so does its engine scraper */
	trace_ras_stop(t->ras);
	t->ras = NULL;
	if (t->w)
		t->session_id = cw_writer_session(t->w);
	trace_chains_close(t);
	store_losses_on_full_disk(t);
	if (t->w && cw_writer_free(t->w))
		res->writer_failed = 1;
	t->w = NULL; /* its thread is gone: the connection is the main thread's */
	if (t->session_id) {
		cw_session_end(t->st, t->session_id, cw_realtime_ns(), trace_measure_offset());
		trace_session_late_facts(t);
	}
	stop_services(t);
	cw_sysinfo_free(t->si);
	trace_tenant_free(t->tenant);
	cw_cuda_probes_close(t->cp);
	trace_inference_free(t->inf); /* its probes share the kernel probes' maps */
	cw_kernel_probes_close(t->kp);
	cw_trace_view_free(t->view);
	cw_store_close(t->st);
	cw_store_reserve_release(&t->reserve);
	res->lock_failed = t->lock_failed;
	res->child_done = t->child_done;
	res->child_status = t->status;
	pthread_mutex_destroy(&t->attach_lock);
	free(t);
}

int cw_trace_run(const struct cw_trace_opts *o, const struct cw_trace_hooks *h, struct cw_trace_result *res)
{
	struct trace *t;

	memset(res, 0, sizeof(*res));
	trace_signals_install();
	if (!(t = trace_session_new(o, h))) {
		cw_trace_fail(&o->say, "out of memory");
		res->step = CW_TRACE_SESSION;
		res->err = -ENOMEM;
		return -1;
	}
	if (!trace_steps_run(t, trace_start_steps, trace_nstart_steps, res)) {
		trace_started(t);
		trace_loop(t);
		trace_drain(t, res);
	}
	trace_session_end(t, res);
	return res->step ? -1 : 0;
}
