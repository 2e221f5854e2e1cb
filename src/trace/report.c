/* A trace's counters (losses, discovery, Python, OTLP, GPU) stored once a
 * second and at the end, what it says about the store meanwhile, and its
 * closing lines. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "export/otlp.h"
#include "pipeline/ops.h"
#include "pipeline/http_track.h"
#include "trace/ras.h"
#include "trace/cap.h"
#include "trace/gpu.h"
#include "trace/inference.h"
#include "trace/python.h"
#include "trace/session.h"
#include "trace/tenant.h"
#include "trace/view.h"
#include "tenant/resolve.h"
#include "util/timeutil.h"

/* The discovery figures stored as trace.discovery.NAME. */
static const struct {
	const char *name;
	size_t off;
} discovery_counters[] = {
	{ "loads", offsetof(struct cw_live_stats, loads) },
	{ "execs", offsetof(struct cw_live_stats, execs) },
	{ "reports", offsetof(struct cw_live_stats, events) },
	{ "held", offsetof(struct cw_live_stats, held) },
	{ "hold_map_full", offsetof(struct cw_live_stats, hold_full) },
	{ "ring_dropped", offsetof(struct cw_live_stats, ring_dropped) },
	{ "swept", offsetof(struct cw_live_stats, swept) },
	{ "attached", offsetof(struct cw_live_stats, attached) },
	{ "loaders", offsetof(struct cw_live_stats, loaders) },
	{ "attach_us_p50", offsetof(struct cw_live_stats, lat_p50_us) },
	{ "attach_us_max", offsetof(struct cw_live_stats, lat_max_us) },
	{ "attach_n", offsetof(struct cw_live_stats, lat_n) },
};

/* Stores the counter prefix+name+suffix. */
static void counter_named(struct cw_writer *w, const char *prefix, const char *name, const char *suffix,
			  uint64_t v)
{
	char full[128];

	snprintf(full, sizeof(full), "%s%s%s", prefix, name, suffix);
	cw_writer_counter_set(w, full, v);
}

/* Lock held. Library discovery (docs/trace.md, "Discovery"). */
static void store_discovery(struct trace *t, struct loss_totals *lt)
{
	struct cw_live_stats ls;
	size_t i;

	if (t->live)
		cw_live_get_stats(t->live, &ls);
	else
		ls = t->live_last;
	cw_writer_counter_set(t->w, "trace.discovery.live", t->live || t->live_was_on);
	for (i = 0; i < sizeof(discovery_counters) / sizeof(discovery_counters[0]); i++)
		counter_named(t->w, "trace.discovery.", discovery_counters[i].name, "",
			      *(const uint64_t *)((const char *)&ls + discovery_counters[i].off));
	/* Copies attached after their process had run on with them mapped:
	 * each is a window in which calls may have been missed. */
	cw_writer_counter_set(t->w, "trace.discovery.late", ls.late + t->rescan_late);
	lt->held = ls.held;
	lt->late = ls.late + t->rescan_late;
}

/* Lock held. Stores every loss counter of this session. */
void trace_store_counters(struct trace *t, struct loss_totals *lt)
{
	static const char *const cs_names[CW_CS_MAX] = {
		NULL, NULL, "trace.cuda.dropped", "trace.cuda.return_orphaned",
		"trace.cuda.aggregated", "trace.cuda.kernel_name_dropped", "trace.cuda.state_map_full",
		"trace.cuda.fold_map_full", "trace.cuda.kept_first", "trace.cuda.kept_sampled", "trace.cuda.kept_slow",
	};
	struct cw_kernel_drop_counts kd;
	struct cw_pipeline_counters pc;
	uint64_t cs[CW_CS_MAX];
	unsigned i;

	memset(lt, 0, sizeof(*lt));
	if (!cw_kernel_probes_drops(t->kp, &kd)) {
		for (i = 0; i < CW_DROP_MAX; i++)
			if (cw_kernel_drop_name(i))
				counter_named(t->w, "trace.ring_drops.", cw_kernel_drop_name(i), "", kd.drops[i]);
		for (i = 0; i < CW_STAT_MAX; i++)
			if (cw_kernel_stat_name(i))
				counter_named(t->w, "trace.kernel.", cw_kernel_stat_name(i), "", kd.stats[i]);
		lt->ring_drops = kd.total_drops;
	}
	if (!cw_cuda_probes_stats(t->cp, cs)) {
		for (i = 0; i < CW_CS_MAX; i++)
			if (cs_names[i])
				cw_writer_counter_set(t->w, cs_names[i], cs[i]);
		lt->aggregated = cs[CW_CS_AGGREGATED];
		/* Every call the probes saw: received here (returned, or still
		 * open and handed over by trace_take_inflight), lost, or counted
		 * in the kernel. */
		cw_writer_counter_set(t->w, "trace.cuda.emitted", t->entries);
		cw_writer_counter_set(t->w, "trace.cuda.calls",
				      t->entries + cs[CW_CS_DROPPED] + cs[CW_CS_STATE_FULL] + cs[CW_CS_AGGREGATED] +
					      t->folded + t->fold_lost);
		cw_writer_counter_set(t->w, "trace.cuda.folded", t->folded);
		cw_writer_counter_set(t->w, "trace.cuda.fold_lost", t->fold_lost);
		lt->folded = t->folded;
		lt->fold_lost = t->fold_lost;
		lt->fold_full = cs[CW_CS_FOLD_FULL];
		lt->kept_first = cs[CW_CS_KEPT_FIRST];
		lt->kept_sampled = cs[CW_CS_KEPT_SAMPLED];
		lt->kept_slow = cs[CW_CS_KEPT_SLOW];
	}
	if (lt->aggregated)
		for (i = 1; i < CW_OP_MAX; i++) {
			struct cw_cuda_agg a;
			const char *op = cw_op_name(i);

			if (!op || cw_cuda_probes_agg(t->cp, i, &a) || !a.count)
				continue;
			counter_named(t->w, "trace.aggregated.", op, ".count", a.count);
			counter_named(t->w, "trace.aggregated.", op, ".sum_ns", a.sum_ns);
			counter_named(t->w, "trace.aggregated.", op, ".max_ns", a.max_ns);
			if (t->view)
				cw_trace_view_set_aggregated(t->view, cw_source_name(cw_op_source(i)), op, a.count);
		}
	/* The agent itself: explain names it when it is the thread that
	 * preempts the workload, with its CPU time (user + system). */
	{
		struct rusage ru;

		cw_writer_counter_set(t->w, "trace.agent.pid", (uint64_t)getpid());
		/* Which cgroup files a fix may name on this host. */
		cw_writer_counter_set(t->w, "host.cgroup_layout", (uint64_t)cw_cgroup_layout());
		if (!getrusage(RUSAGE_SELF, &ru))
			cw_writer_counter_set(t->w, "trace.agent.cpu_ns",
					      ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * NSEC_PER_SEC +
						      ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000);
	}
	cw_writer_counter_set(t->w, "trace.consumer.rejected", t->cons.rejected);
	cw_writer_counter_set(t->w, "trace.kernel_names_unresolved", t->cons.names_unresolved);
	cw_writer_counter_set(t->w, "trace.json_write_errors", t->json_write_errors);
	cw_writer_counter_set(t->w, "trace.pids_untracked", t->pending_lost);
	trace_tenant_counters(t->tenant, t->w);
	if (t->py) {
		struct trace_python_stats ps;

		trace_python_get_stats(t->py, &ps);
		cw_writer_counter_set(t->w, "trace.py_processes", ps.attached);
		cw_writer_counter_set(t->w, "trace.py_unsupported", ps.unsupported);
		cw_writer_counter_set(t->w, "trace.py_threads", ps.threads);
		cw_writer_counter_set(t->w, "trace.native_stacks_unnamed.stalled", ps.native_stalled);
		cw_writer_counter_set(t->w, "trace.native_stacks_unnamed.skipped", ps.native_skipped);
	}
	store_discovery(t, lt);
	if (t->otlp) {
		struct cw_otlp_stats os;

		cw_otlp_get_stats(t->otlp, &os);
		cw_writer_counter_set(t->w, "otlp.sent", os.sent);
		cw_writer_counter_set(t->w, "otlp.retries", os.retries);
		cw_writer_counter_set(t->w, "otlp.dropped", os.dropped_queue);
		cw_writer_counter_set(t->w, "otlp.refused", os.rejected);
	}
	trace_gpu_counters(t->gpu);
	trace_ras_counters(t->ras);
	trace_inference_counters(t->inf);
	cw_writer_counter_set(t->w, "trace.libraries", (uint64_t)cw_cuda_probes_nlibs(t->cp));
	cw_writer_counter_set(t->w, "trace.probes", (uint64_t)cw_cuda_probes_npairs(t->cp));
	cw_pipeline_get_counters(t->pipe, &pc);
	/* Write errors are not added: the rows behind them are counted, one
	 * by one, in store.failed_rows (a failed batch is many rows). */
	lt->pipeline = pc.rejected_size + pc.rejected_version + pc.rejected_type + pc.unpaired_returns +
		       pc.unfinished_entries + pc.overflow_entries;
	lt->open_at_end = pc.open_at_end;
	{
		struct cw_writer_stats ws;

		cw_writer_get_stats(t->w, &ws);
		lt->store_failed = ws.failed_rows;
		lt->store_error = ws.failing ? ws.last_error : 0;
		lt->store_error_ever = ws.last_error;
	}
	lt->held_dropped = t->cons.spool_dropped;
	cw_writer_counter_set(t->w, "trace.store_wait.held", t->cons.spooled);
	cw_writer_counter_set(t->w, "trace.store_wait.dropped", t->cons.spool_dropped);
	cw_writer_counter_set(t->w, "trace.store_wait.ms",
			      (t->cons.held_ns_total +
			       (t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0)) / 1000000);
}

/* Lock held, once a second: says (once per episode, through the sink when there
 * is no live view) that the store is locked or failing, and ends the
 * trace when a lock outlasts --lock-wait. */
void trace_watch_store(struct trace *t, const struct loss_totals *lt)
{
	uint64_t held = t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0;
	char lim[32];

	cw_format_duration(t->o.lock_wait_ns, lim, sizeof(lim));
	if (held && !t->said_held) {
		t->said_held = 1;
		t->replayed_mark = t->cons.spool_replayed;
		t->dropped_mark = t->cons.spool_dropped;
		if (!t->view_on && !t->o.json) {
			if (t->store_err == -EBUSY)
				cw_trace_say(&t->o.say, "causeway: database \"%s\" is locked by another process; holding records in "
						"memory (up to %llu MiB) for up to %s\n",
					t->o.db, (unsigned long long)(t->o.lock_buffer >> 20), lim);
			else
				cw_trace_say(&t->o.say, "causeway: database \"%s\" cannot take rows (%s); holding records in "
						"memory (up to %llu MiB) for up to %s\n",
					t->o.db, trace_store_problem(t->store_err), (unsigned long long)(t->o.lock_buffer >> 20),
					lim);
		}
	} else if (!held && t->said_held && !cw_consumer_spool_records(&t->cons)) {
		t->said_held = 0;
		if (!t->view_on && !t->o.json)
			cw_trace_say(&t->o.say, "causeway: database \"%s\" writable again; %llu held records written, %llu dropped\n",
				t->o.db, (unsigned long long)(t->cons.spool_replayed - t->replayed_mark),
				(unsigned long long)(t->cons.spool_dropped - t->dropped_mark));
	}
	if (held > t->o.lock_wait_ns)
		t->lock_failed = 1;
	if (lt->store_error && !t->said_failing) {
		t->said_failing = 1;
		if (!t->view_on && !t->o.json)
			cw_trace_say(&t->o.say, "causeway: %s: rows cannot be stored in \"%s\" (%llu so far); still tracing\n",
				trace_store_problem(lt->store_error), t->o.db, (unsigned long long)lt->store_failed);
	} else if (!lt->store_error && t->said_failing) {
		t->said_failing = 0;
		if (!t->view_on && !t->o.json)
			cw_trace_say(&t->o.say, "causeway: \"%s\" takes rows again; %llu rows were lost\n", t->o.db,
				(unsigned long long)lt->store_failed);
	}
}

/* The closing line, and the one error line when the store lost rows or
 * failed (failed: the drain's last writes did). */
void trace_report_end(struct trace *t, int failed, struct cw_trace_result *res)
{
	struct cw_writer_stats ws;
	struct loss_totals lt;
	const char *why;
	char lim[32], cap[32], traced[32], open_note[64] = "";

	/* How long the probes were on: from the "attached" line to the stop
	 * (what --duration counts). */
	cw_format_duration(t->traced_to_ns > t->traced_from_ns ? t->traced_to_ns - t->traced_from_ns : 0, traced,
			   sizeof(traced));
	cw_consumer_lock(&t->cons);
	trace_store_counters(t, &lt);
	cw_writer_get_stats(t->w, &ws);
	cw_consumer_unlock(&t->cons);
	why = trace_store_problem(lt.store_error_ever);
	/* Calls that never returned by the stop are data (a hang shows as
	 * them), so they are named apart from the losses. */
	if (lt.open_at_end)
		snprintf(open_note, sizeof(open_note), "; %llu call%s still open stored unfinished",
			 (unsigned long long)lt.open_at_end, lt.open_at_end == 1 ? "" : "s");
	if (!t->o.json)
		cw_trace_say(&t->o.say,
			     "causeway: stopped after tracing %s; ring drops %llu, aggregated %llu, pipeline losses %llu, "
			     "store losses %llu%s%s%s; discovery: %llu held, %llu late%s%s\n",
			     traced, (unsigned long long)lt.ring_drops, (unsigned long long)lt.aggregated,
			     (unsigned long long)lt.pipeline, (unsigned long long)(lt.store_failed + lt.held_dropped),
			     why && lt.store_failed ? " (" : "", why && lt.store_failed ? why : "",
			     why && lt.store_failed ? ")" : "", (unsigned long long)lt.held,
			     (unsigned long long)lt.late, lt.late ? " (calls before those attaches may be missing)" : "",
			     open_note);
	if (!t->o.json && t->o.capture_summary)
		cw_trace_say(&t->o.say,
			     "causeway: summary capture: %llu calls folded in the kernel into per-second histograms; "
			     "kept whole: %llu first, %llu sampled, %llu slow or before their op's estimate; fold map "
			     "full %llu, folds not stored %llu (trace.cuda.* in the database)\n",
			     (unsigned long long)lt.folded, (unsigned long long)lt.kept_first,
			     (unsigned long long)lt.kept_sampled, (unsigned long long)lt.kept_slow,
			     (unsigned long long)lt.fold_full, (unsigned long long)lt.fold_lost);
	if (!t->o.json && (ws.pruned_events || ws.pruned_evidence || ws.pruned_context || ws.pruned_chains)) {
		char chains[48] = "";

		if (ws.pruned_chains)
			snprintf(chains, sizeof(chains), ", %llu chains", (unsigned long long)ws.pruned_chains);
		cw_trace_format_bytes(t->o.size_cap, cap, sizeof(cap));
		cw_trace_say(&t->o.say,
			     "causeway: size cap %s: pruned %llu ordinary calls older than the recent window, %llu "
			     "evidence rows no kept call needed, %llu ordinary calls of the window, %llu kept rows, "
			     "%llu context rows%s (store.pruned.* in the database)\n",
			     cap, (unsigned long long)ws.pruned_ordinary, (unsigned long long)ws.pruned_evidence,
			     (unsigned long long)ws.pruned_recent, (unsigned long long)ws.pruned_kept,
			     (unsigned long long)ws.pruned_context, chains);
	}
	if (!t->o.json && t->inf) {
		struct cw_http_track_totals ht;

		cw_consumer_lock(&t->cons);
		cw_pipeline_http_totals(t->pipe, &ht);
		cw_consumer_unlock(&t->cons);
		cw_trace_say(&t->o.say,
			     "causeway: inference: %llu requests stored; %llu connections were not HTTP/1.x, %llu of them "
			     "TLS (encrypted by the server: not seen; docs/inference.md); %llu not followed (http.* in "
			     "the database)\n",
			     (unsigned long long)ht.stored, (unsigned long long)ht.not_http, (unsigned long long)ht.tls,
			     (unsigned long long)ht.dropped);
	}
	cw_format_duration(t->o.lock_wait_ns, lim, sizeof(lim));
	if (t->lock_failed) {
		cw_trace_fail(&t->o.say,
			      "database \"%s\" stayed locked by another process past --lock-wait %s: "
			      "%llu records were not stored; the trace is incomplete",
			      t->o.db, lim, (unsigned long long)(lt.held_dropped + lt.store_failed));
		failed = 1;
	} else if (lt.store_failed || lt.held_dropped) {
		cw_trace_fail(&t->o.say, "%s: %llu rows could not be stored in \"%s\"; the trace is incomplete",
			      lt.store_failed ? (why ? why : "store error") : "records dropped while the store was locked",
			      (unsigned long long)(lt.store_failed + lt.held_dropped), t->o.db);
		failed = 1;
	} else if (failed) {
		cw_trace_fail(&t->o.say, "writing \"%s\" failed: %s", t->o.db,
			      cw_store_strerror(t->cons.last_error ? t->cons.last_error : -EIO));
	}
	res->store_failed = failed;
}
