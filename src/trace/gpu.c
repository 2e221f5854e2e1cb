/* GPU telemetry, Xid faults and live stall detection during trace
 * (trace_gpu.h, docs/gpu.md). */
#include "trace/gpu.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/sampler.h"
#include "gpu/stall.h"
#include "gpu/threadstate.h"
#include "loader/discover.h"
#include "pyframe/resolver.h"
#include "store/gpu_store.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"

struct trace_gpu {
	struct trace_gpu_opts o;
	struct cw_consumer *cons;
	struct cw_writer *w;
	struct cw_gpu_store *gs;
	struct cw_trace_view *view;
	struct cw_gpu_sampler *sampler;
	struct cw_stall *stall;
	struct cw_pyres *py;
	char uuid[CW_GPU_MAX][96];
	struct cw_gpu_sampler_stats final;
	int halted;
	uint64_t stalls, gpu_write_errors, end_snapshots;
	uint64_t aggregated;
	int64_t mono_to_wall;
};

static void alert(struct trace_gpu *g, const char *text)
{
	if (g->view)
		cw_trace_view_alert(g->view, text);
	if (!g->o.quiet)
		cw_trace_say(g->o.say, "causeway: warning: %s\n", text);
}

static void on_device(void *ctx, const struct cw_gpu_device *d, const char *driver)
{
	struct trace_gpu *g = ctx;

	cw_consumer_lock(g->cons);
	if (d->index >= 0 && d->index < CW_GPU_MAX)
		snprintf(g->uuid[d->index], sizeof(g->uuid[0]), "%s", d->uuid);
	cw_writer_db_lock(g->w);
	if (cw_gpu_store_device(g->gs, d, driver, cw_realtime_ns()))
		g->gpu_write_errors++;
	cw_writer_db_unlock(g->w);
	cw_consumer_unlock(g->cons);
}

static void on_samples(void *ctx, const struct cw_gpu_sample *s, int n, const struct cw_gpu_device *devs)
{
	struct trace_gpu *g = ctx;

	cw_consumer_lock(g->cons);
	for (int i = 0; i < n; i++) {
		cw_writer_db_lock(g->w);
		if (cw_gpu_store_sample(g->gs, &s[i], devs[i].uuid))
			g->gpu_write_errors++;
		cw_writer_db_unlock(g->w);
		if (g->view && i < CW_TRACE_VIEW_GPUS) {
			char line[200], why[96];
			cw_gpu_reasons_text(s[i].reasons & ~(int64_t)CW_GPU_REASON_IDLE, why, sizeof(why));
			snprintf(line, sizeof(line),
				 "gpu%d: util %lld%%  mem %.1f/%.1f GiB  %lld C  %.0f W  sm %lld MHz%s%s", i,
				 (long long)s[i].gpu_util, s[i].mem_used / 1073741824.0, s[i].mem_total / 1073741824.0,
				 (long long)s[i].temp_gpu, s[i].power_mw / 1000.0, (long long)s[i].sm_mhz,
				 why[0] ? "  clocks limited: " : "", why);
			cw_trace_view_gpu_line(g->view, i, line);
		}
	}
	cw_consumer_unlock(g->cons);
}

static void on_process(void *ctx, int device, uint64_t mono, uint64_t wall, const struct cw_gpu_proc *p)
{
	struct trace_gpu *g = ctx;

	cw_consumer_lock(g->cons);
	cw_writer_db_lock(g->w);
	if (cw_gpu_store_process(g->gs, device, mono, wall, p))
		g->gpu_write_errors++;
	cw_writer_db_unlock(g->w);
	cw_consumer_unlock(g->cons);
}

static void on_xid(void *ctx, const struct cw_xid *x, int device, uint64_t mono, const char *from)
{
	struct trace_gpu *g = ctx;
	const struct cw_xid_info *info = cw_xid_lookup(x->code);
	json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:s}", "pci", x->pci, "text", x->text, "from", from, "meaning",
			      info->name, "severity", info->severity);
	char *detail = d ? json_dumps(d, JSON_COMPACT) : NULL;
	char text[256];
	struct cw_event_row r = {
		.mono_ns = mono, .wall_ns = cw_realtime_ns(), .pid = x->pid > 0 ? (uint32_t)x->pid : 0,
		.tid = x->pid > 0 ? (uint32_t)x->pid : 0, .comm = x->comm[0] ? x->comm : NULL, .source = "gpu",
		.op = "xid", .detail = detail, .nargs = 1, .args = {x->code}, .device = device,
	};

	snprintf(text, sizeof(text), "Xid %u on GPU %s (%s): %s%s%s", x->code, x->pci[0] ? x->pci : "?", info->severity,
		 info->name, x->pid > 0 ? ", process " : "", x->pid > 0 ? x->comm : "");
	if (x->pid > 0)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), " (pid %d)", x->pid);
	cw_consumer_lock(g->cons);
	if (cw_writer_event(g->w, &r))
		g->gpu_write_errors++;
	alert(g, text);
	cw_consumer_unlock(g->cons);
	free(detail);
	json_decref(d);
}

int trace_gpu_start(struct trace_gpu **out, const struct trace_gpu_opts *o, struct cw_consumer *cons,
		    struct cw_writer *w, struct cw_store *st, const char *node, int64_t session_id,
		    struct cw_trace_view *view)
{
	struct trace_gpu *g = calloc(1, sizeof(*g));
	struct cw_stall_opts so = {.floor_ns = o->stall_floor_ns, .summary = o->summary};
	int rc;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->o = *o;
	g->cons = cons;
	g->w = w;
	g->view = view;
	if (!(rc = cw_stall_new(&g->stall, &so))) {
		cw_writer_db_lock(w);
		rc = cw_gpu_store_new(&g->gs, st->db, node, session_id);
		cw_writer_db_unlock(w);
	}
	if (rc) {
		trace_gpu_stop(g);
		return rc;
	}
	if (!o->no_gpu) {
		struct cw_gpu_sampler_opts sopts = {.interval_ns = o->interval_ns, .nvml_path = o->nvml_path};
		struct cw_gpu_sink sink = {g, on_device, on_samples, on_process, on_xid};
		char why[256];

		rc = cw_gpu_sampler_start(&g->sampler, &sopts, &sink, why, sizeof(why));
		if (rc) {
			trace_gpu_stop(g);
			return rc;
		}
		if (why[0])
			cw_debug("gpu telemetry: %s", why);
	}
	*out = g;
	return 0;
}

static int is_gpu_call(const char *source)
{
	return source && (!strcmp(source, "cuda") || !strcmp(source, "driver") || !strcmp(source, "nccl") ||
			  !strcmp(source, "graph"));
}

void trace_gpu_observe(struct trace_gpu *g, const struct cw_event_row *r)
{
	if (!g || !is_gpu_call(r->source) || !r->op)
		return;
	cw_stall_call(g->stall, r->pid, r->tid, r->op, r->mono_ns, r->mono_ns + r->duration_ns);
	cw_stall_row_second(g->stall, r->pid, r->op, r->mono_ns, r->wall_ns);
	if (r->wall_ns)
		g->mono_to_wall = (int64_t)r->wall_ns - (int64_t)r->mono_ns;
}

void trace_gpu_folded(struct trace_gpu *g, uint32_t pid, const char *source, const char *op, int64_t sec,
		      uint64_t count)
{
	if (g && is_gpu_call(source) && op)
		cw_stall_folded(g->stall, pid, op, sec, count);
}

void trace_gpu_exited(struct trace_gpu *g, uint32_t pid)
{
	if (g)
		cw_stall_exited(g->stall, pid);
}

static int alive(uint32_t pid, void *ctx)
{
	(void)ctx;
	return cw_pid_exists(pid) == 1;
}

/* Every thread of pid now (/proc, Python lines, the traced GPU calls each
 * is inside) as the detail's "threads" array; desc: the thread tid's state
 * in words (or the main thread's), "" when neither was found. */
static json_t *threads_json(struct trace_gpu *g, uint32_t pid, uint32_t tid, uint64_t now, char *desc, size_t dlen)
{
	static struct cw_thread_state th[CW_THREADSTATE_MAX];
	json_t *arr;
	int n, main_i = -1;

	if (dlen)
		desc[0] = '\0';
	if (!g->py && cw_pyres_new(&g->py))
		g->py = NULL;
	n = cw_thread_states((pid_t)pid, th, CW_THREADSTATE_MAX, g->py);
	/* A thread inside a traced call that has not returned (a hung
	 * synchronize) is named by that call. */
	if (g->o.open_calls && n > 0) {
		uint32_t tids[16];
		const char *ops[16];
		uint64_t since[16];
		int k = g->o.open_calls(g->o.open_calls_ctx, pid, tids, ops, since, 16);
		for (int j = 0; j < k; j++)
			for (int i = 0; i < n; i++)
				if ((uint32_t)th[i].tid == tids[j] && ops[j]) {
					snprintf(th[i].in_call, sizeof(th[i].in_call), "%s", ops[j]);
					th[i].in_call_ns = now > since[j] ? now - since[j] : 0;
					snprintf(th[i].wait, sizeof(th[i].wait), "cuda call");
				}
	}
	arr = json_array();
	for (int i = 0; i < n; i++) {
		json_t *t = json_pack("{s:i, s:o, s:s#, s:s, s:I}", "tid", th[i].tid, "comm", cw_json_str(th[i].comm), "state",
				      &th[i].state, 1, "wait", th[i].wait, "syscall", (json_int_t)th[i].syscall);
		if (!t)
			continue;
		if (th[i].syscall_name[0])
			json_object_set_new(t, "syscall_name", cw_json_str(th[i].syscall_name));
		if (th[i].target[0])
			json_object_set_new(t, "target", cw_json_str(th[i].target));
		if (th[i].wchan[0])
			json_object_set_new(t, "wchan", cw_json_str(th[i].wchan));
		if (th[i].python[0])
			json_object_set_new(t, "python", cw_json_str(th[i].python));
		if (th[i].in_call[0]) {
			json_object_set_new(t, "in_call", cw_json_str(th[i].in_call));
			json_object_set_new(t, "in_call_ns", json_integer((json_int_t)th[i].in_call_ns));
		}
		json_array_append_new(arr, t);
		/* The thread that made the last CUDA call speaks for the process. */
		if ((uint32_t)th[i].tid == tid || (main_i < 0 && (uint32_t)th[i].tid == pid))
			main_i = i;
	}
	if (main_i >= 0 && dlen)
		cw_thread_state_describe(&th[main_i], desc, dlen);
	return arr;
}

/* Names the stall, with every thread's state, into an event row of
 * source 'stall' (the rule reads it back) and an alert. */
static void report_stall(struct trace_gpu *g, const struct cw_stall_hit *h, uint64_t now)
{
	json_t *d, *arr;
	char *detail, step[32], silent[32], text[640], desc[320] = "";

	arr = threads_json(g, h->pid, h->last_tid, now, desc, sizeof(desc));
	d = json_pack("{s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:o}", "last_call_wall_ns",
		      (json_int_t)((int64_t)h->last_ns + g->mono_to_wall), "step_ns", (json_int_t)h->step_ns, "threshold_ns",
		      (json_int_t)h->threshold_ns, "silent_ns", (json_int_t)h->silent_ns, "last_op", h->last_op,
		      "last_tid", (json_int_t)h->last_tid, "calls", (json_int_t)h->calls, "threads", arr);
	detail = d ? json_dumps(d, JSON_COMPACT) : NULL;
	{
		/* Stamped when named (the silence so far as duration), so the
		 * data of the session reaches past the last call. */
		struct cw_event_row r = {
			.mono_ns = now, .wall_ns = cw_realtime_ns(), .duration_ns = now - h->last_ns, .pid = h->pid,
			.tid = h->last_tid, .source = "stall", .op = "training_stall", .detail = detail, .device = -1,
		};
		if (cw_writer_event(g->w, &r))
			g->gpu_write_errors++;
	}
	cw_format_duration(h->step_ns, step, sizeof(step));
	cw_format_duration(h->silent_ns, silent, sizeof(silent));
	snprintf(text, sizeof(text), "training stall: pid %u made no CUDA call for %s (step %s, last %s)%s%s",
		 h->pid, silent, step, h->last_op, desc[0] ? "; " : "", desc);
	alert(g, text);
	g->stalls++;
	free(detail);
	json_decref(d);
}

void trace_gpu_end_snapshot(struct trace_gpu *g, uint64_t now)
{
	uint32_t pids[TRACE_GPU_END_PROCS], tids[TRACE_GPU_END_PROCS];
	int n;

	if (!g)
		return;
	n = cw_stall_procs(g->stall, pids, tids, TRACE_GPU_END_PROCS);
	for (int i = 0; i < n; i++) {
		json_t *arr, *d;
		char *detail;

		if (cw_pid_exists(pids[i]) != 1)
			continue;
		arr = threads_json(g, pids[i], tids[i], now, NULL, 0);
		if (!json_array_size(arr)) {
			json_decref(arr);
			continue;
		}
		d = json_pack("{s:I, s:o}", "last_tid", (json_int_t)tids[i], "threads", arr);
		detail = d ? json_dumps(d, JSON_COMPACT) : NULL;
		if (detail) {
			struct cw_event_row r = {
				.mono_ns = now, .wall_ns = cw_realtime_ns(), .pid = pids[i], .tid = tids[i],
				.source = "threads", .op = "end_of_trace", .detail = detail, .device = -1,
			};
			if (cw_writer_event(g->w, &r))
				g->gpu_write_errors++;
			else
				g->end_snapshots++;
		}
		free(detail);
		json_decref(d);
	}
}

void trace_gpu_tick(struct trace_gpu *g, uint64_t now, uint64_t aggregated)
{
	struct cw_stall_hit hits[8];
	int n;

	if (!g)
		return;
	/* Calls counted in the kernel (the ring over its fill threshold) are
	 * calls the detector cannot see: silence then proves nothing. */
	if (aggregated != g->aggregated) {
		g->aggregated = aggregated;
		return;
	}
	n = cw_stall_check(g->stall, now, alive, NULL, hits, 8);
	for (int i = 0; i < n; i++)
		report_stall(g, &hits[i], now);
}

void trace_gpu_counters(struct trace_gpu *g)
{
	struct cw_gpu_sampler_stats s;

	if (!g)
		return;
	cw_writer_counter_set(g->w, "trace.gpu.stalls", g->stalls);
	cw_writer_counter_set(g->w, "trace.gpu.end_snapshots", g->end_snapshots);
	cw_writer_counter_set(g->w, "trace.gpu.write_errors", g->gpu_write_errors);
	if (g->sampler)
		cw_gpu_sampler_stats(g->sampler, &s);
	else if (g->halted)
		s = g->final;
	else
		return;
	cw_writer_counter_set(g->w, "trace.gpu.devices", (uint64_t)s.ndev);
	cw_writer_counter_set(g->w, "trace.gpu.samples", s.samples);
	cw_writer_counter_set(g->w, "trace.gpu.sample_ns", s.sample_ns);
	cw_writer_counter_set(g->w, "trace.gpu.xid_kmsg", s.xid_kmsg);
	cw_writer_counter_set(g->w, "trace.gpu.xid_nvml", s.xid_nvml);
	cw_writer_counter_set(g->w, "trace.gpu.xid_duplicates", s.xid_duplicates);
	cw_writer_counter_set(g->w, "trace.gpu.kmsg_rejected", s.kmsg_rejected);
}

void trace_gpu_halt(struct trace_gpu *g)
{
	if (!g || !g->sampler)
		return;
	cw_gpu_sampler_stats(g->sampler, &g->final);
	cw_gpu_sampler_stop(g->sampler);
	g->sampler = NULL;
	g->halted = 1;
}

void trace_gpu_stop(struct trace_gpu *g)
{
	if (!g)
		return;
	cw_gpu_sampler_stop(g->sampler);
	cw_stall_free(g->stall);
	if (g->gs) {
		cw_writer_db_lock(g->w);
		cw_gpu_store_free(g->gs);
		cw_writer_db_unlock(g->w);
	}
	cw_pyres_free(g->py);
	free(g);
}
