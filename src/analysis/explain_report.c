/* explain's result: its warnings, and its outputs: the text report, the
 * JSON contract (docs/explain.md) and the append-only chains history. One
 * chain, three renderings. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ras_report.h"
#include "util/term.h"
#include "analysis/thread_states.h"
#include "analysis/engine.h"
#include "analysis/explain.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

/* Rounded so that outputs are stable across libm and platforms. */
static json_t *jreal(double v, double scale)
{
	return json_real(round(v * scale) / scale);
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* Innermost first: {"kind":"native","frame":"libcudart.so.13!cudaMalloc+0x0"}
 * or {"kind":"py","file":..,"line":..,"function":..}. */
static json_t *stack_to_json(const struct cw_chain *c)
{
	json_t *a = json_array();

	for (int i = 0; i < c->nstack; i++) {
		const struct cw_stack_frame *f = &c->stack[i];

		if (f->is_py)
			json_array_append_new(a, json_pack("{s:s, s:o, s:i, s:o}", "kind", "py", "file", cw_json_str(f->file),
							   "line", f->line, "function", cw_json_str(f->function)));
		else
			json_array_append_new(a, json_pack("{s:s, s:o}", "kind", "native", "frame", cw_json_str(f->function)));
	}
	return a;
}

/* nccl_hang's "wavefront": the collective where the ranks diverge and
 * each rank's place and state there (docs/rules.md). */
static json_t *wavefront_json(const struct cw_chain *c)
{
	json_t *ranks = json_array(), *missing = json_array();

	for (int i = 0; i < c->nmissing; i++)
		json_array_append_new(missing, json_integer(c->missing_ranks[i]));
	for (int i = 0; i < c->nwavefront; i++) {
		const struct cw_wavefront_rank *w = &c->wavefront[i];
		json_t *r = json_object();

		json_object_set_new(r, "rank", w->rank >= 0 ? json_integer(w->rank) : json_null());
		json_object_set_new(r, "pid", json_integer((json_int_t)w->pid));
		json_object_set_new(r, "tid", json_integer((json_int_t)w->tid));
		json_object_set_new(r, "node", cw_json_str(w->node));
		json_object_set_new(r, "entered", json_boolean(!w->missing));
		json_object_set_new(r, "last_seq", json_integer((json_int_t)w->last_seq));
		json_object_set_new(r, "last_call", w->last_call[0] ? cw_json_str(w->last_call) : json_null());
		json_object_set_new(r, "last_call_open", json_boolean(w->last_call_open));
		json_object_set_new(r, "last_call_ago_ns", w->last_call[0] ? json_integer((json_int_t)w->last_call_ago_ns)
									 : json_null());
		json_object_set_new(r, "thread_state", w->thread_state[0] ? cw_json_str(w->thread_state) : json_null());
		json_object_set_new(r, "state_from", w->state_from[0] ? cw_json_str(w->state_from) : json_null());
		json_object_set_new(r, "off_cpu_ns", w->off_cpu_ns ? json_integer((json_int_t)w->off_cpu_ns) : json_null());
		json_object_set_new(r, "python", w->python[0] ? cw_json_str(w->python) : json_null());
		json_object_set_new(r, "thread", w->th.tid ? cw_chain_thread_json(&w->th) : json_null());
		json_array_append_new(ranks, r);
	}
	return json_pack("{s:I, s:I, s:o, s:i, s:o}", "seq", (json_int_t)c->seq, "comm_id", (json_int_t)c->comm_id,
			 "missing_ranks", missing, "ranks_total", c->nwavefront_total, "ranks", ranks);
}

/* One wavefront rank in words, for the text report. */
static void wavefront_text(const struct cw_wavefront_rank *w, char *buf, size_t len)
{
	char ago[32], st[420] = "";
	size_t n;

	n = (size_t)snprintf(buf, len, "%s%d (pid %lld): %s #%lld", w->rank >= 0 ? "rank " : "pid ",
			     w->rank >= 0 ? w->rank : (int)w->pid, (long long)w->pid,
			     w->missing ? "missing, last entered" : "waiting in", (long long)w->last_seq);
	if (w->last_call[0] && n < len) {
		cw_format_duration(w->last_call_ago_ns, ago, sizeof(ago));
		n += (size_t)snprintf(buf + n, len - n, "; last call %s%s, %s before the end", w->last_call,
				      w->last_call_open ? " (never returned)" : "", ago);
	}
	if (w->th.tid) {
		cw_chain_thread_text(&w->th, st, sizeof(st));
	} else if (w->off_cpu_ns) {
		cw_format_duration(w->off_cpu_ns, ago, sizeof(ago));
		snprintf(st, sizeof(st), "thread %lld %s, off CPU for %s", (long long)w->tid, w->thread_state, ago);
	} else if (!strcmp(w->thread_state, "in_call")) {
		snprintf(st, sizeof(st), "thread %lld inside %s, not returned", (long long)w->tid, w->last_call);
	} else if (w->thread_state[0]) {
		snprintf(st, sizeof(st), "thread %lld %s", (long long)w->tid, w->thread_state);
	}
	if (st[0] && n < len)
		n += (size_t)snprintf(buf + n, len - n, "; %s (%s)", st, w->state_from);
	/* The stored thread's text carries its own line already. */
	if (w->python[0] && !w->th.python[0] && n < len)
		snprintf(buf + n, len - n, "; python %s", w->python);
}

/* Fields of the NCCL kinds, added only where set so other chains keep
 * their shape: root_cause.because, .seq, .missing_ranks, .missing_state,
 * and caused_by (the chain that explains this one). */
static void nccl_fields(json_t *o, const struct cw_chain *c)
{
	json_t *rc = json_object_get(o, "root_cause");

	if (c->because[0])
		json_object_set_new(rc, "because", cw_json_str(c->because));
	if (c->seq)
		json_object_set_new(rc, "seq", json_integer(c->seq));
	if (c->comm_id)
		json_object_set_new(rc, "comm_id", json_integer(c->comm_id));
	if (c->kind == CW_KIND_NCCL_HANG) {
		json_t *m = json_array(), *st = json_array();

		for (int i = 0; i < c->nmissing; i++) {
			json_array_append_new(m, json_integer(c->missing_ranks[i]));
			if (i < CW_CHAIN_MAX_MISSING)
				json_array_append_new(st, cw_json_str(c->missing_state[i]));
		}
		json_object_set_new(rc, "missing_ranks", m);
		json_object_set_new(rc, "missing_state", st);
	}
	if (c->kind == CW_KIND_NCCL_HANG && c->nwavefront)
		json_object_set_new(o, "wavefront", wavefront_json(c));
	if (c->kind == CW_KIND_NCCL_HANG)
		json_object_set_new(o, "ras", cw_chain_ras_json(c));
	if (c->nthreads) {
		json_t *th = json_array();

		for (int i = 0; i < c->nthreads; i++)
			json_array_append_new(th, cw_chain_thread_json(&c->threads[i]));
		json_object_set_new(o, "thread_states", json_pack("{s:o, s:i, s:o}", "from", cw_json_str(c->threads_from),
								  "total", c->nthreads_total, "threads", th));
	}
	if (c->error_family[0]) {
		json_t *ops = json_array();

		for (int i = 0; i < c->nfailed_ops; i++)
			json_array_append_new(ops, json_pack("{s:o, s:I, s:I, s:o}", "op", cw_json_str(c->failed_ops[i].op),
							     "failing", (json_int_t)c->failed_ops[i].failing, "calls",
							     (json_int_t)c->failed_ops[i].calls, "failing_share",
							     jreal(c->failed_ops[i].share, 1000)));
		json_object_set_new(o, "error", json_pack("{s:I, s:o, s:s, s:o}", "code", (json_int_t)c->error_code,
							  "name",
							  c->error_name[0] ? cw_json_str(c->error_name) : json_null(),
							  "family", c->error_family, "ops", ops));
	}
	if (c->caused_by.kind[0]) {
		json_t *cb = json_pack("{s:o, s:o, s:I}", "kind", cw_json_str(c->caused_by.kind), "node", cw_json_str(c->caused_by.node), "pid",
				       (json_int_t)c->caused_by.pid);
		json_object_set_new(cb, "rank", c->caused_by.rank >= 0 ? json_integer(c->caused_by.rank) : json_null());
		json_object_set_new(o, "caused_by", cb);
	}
}

/* inference_latency's "requests": the route, the baseline it was judged
 * against and the worst slow requests (docs/rules.md). */
static json_t *requests_json(const struct cw_chain *c)
{
	json_t *slow = json_array();

	for (int i = 0; i < c->nrequests; i++) {
		const struct cw_chain_request *q = &c->requests[i];
		char t[40];

		cw_format_time(q->wall_ns, t, sizeof(t));
		json_array_append_new(slow, json_pack("{s:I, s:s, s:o, s:I, s:o, s:I, s:I, s:s}", "wall_ns",
						      (json_int_t)q->wall_ns, "time", t, "ttft_ns",
						      q->ttft_ns >= 0 ? json_integer(q->ttft_ns) : json_null(),
						      "duration_ns", (json_int_t)q->dur_ns, "status",
						      q->status ? json_integer(q->status) : json_null(), "pid",
						      (json_int_t)q->pid, "tid", (json_int_t)q->tid, "slow", q->why));
	}
	return json_pack("{s:o, s:o, s:{s:s, s:o, s:o}, s:o}", "method", cw_json_str(c->route_method), "path",
			 cw_json_str(c->route_path), "baseline", "from", c->route_baseline_slo ? "slo" : "route",
			 "duration_p50_ns", c->route_dur_p50_ns ? jint(c->route_dur_p50_ns) : json_null(),
			 "ttft_p50_ns", c->route_ttft_p50_ns ? jint(c->route_ttft_p50_ns) : json_null(), "slow", slow);
}

json_t *cw_chain_to_json(const struct cw_chain *c)
{
	json_t *o = json_object(), *tl = json_array(), *fix = json_array(), *ev = json_object();

	json_object_set_new(o, "severity", cw_json_str(cw_severity_name(c->severity)));
	json_object_set_new(o, "op", cw_json_str(c->op));
	json_object_set_new(o, "source", cw_json_str(c->source));
	json_object_set_new(o, "count", jint(c->count));
	json_object_set_new(o, "slow_count", jint(c->slow_count));
	json_object_set_new(o, "p50_ns", jint(c->p50_ns));
	json_object_set_new(o, "p95_ns", jint(c->p95_ns));
	json_object_set_new(o, "p99_ns", jint(c->p99_ns));
	json_object_set_new(o, "max_ns", jint(c->max_ns));
	json_object_set_new(o, "tail_ratio", jreal(c->tail_ratio, 100));
	json_object_set_new(o, "explained_share", jreal(c->explained_share, 1000));
	json_object_set_new(o, "slow_time_ns", jint(c->slow_time_ns));
	json_object_set_new(o, "explained_ns", jint(c->explained_ns));
	json_object_set_new(o, "root_cause", json_pack("{s:s, s:o}", "kind", cw_kind_name(c->kind),
						       "summary", cw_json_str(c->summary)));
	{
		char line[800];

		cw_chain_oneline(c, line, sizeof(line));
		json_object_set_new(o, "headline", cw_json_str(line));
	}
	json_object_set_new(o, "expected_ns", c->expected_ns ? jint(c->expected_ns) : json_null());
	json_object_set_new(o, "expected_from", c->expected_ns ? json_string(c->expected_outside ? "outside_window" : "window")
								: json_null());
	nccl_fields(o, c);
	if (c->kind == CW_KIND_INFERENCE_LATENCY)
		json_object_set_new(o, "requests", requests_json(c));
	for (int i = 0; i < c->ntimeline; i++)
		json_array_append_new(tl, json_pack("{s:s, s:I, s:o}", "layer",
						    cw_layer_name(c->timeline[i].layer), "t_ns",
						    (json_int_t)c->timeline[i].t_ns, "text",
						    cw_json_str(c->timeline[i].text)));
	json_object_set_new(o, "timeline", tl);
	json_t *kinds = json_array();

	for (int i = 0; i < c->nfix; i++) {
		json_array_append_new(fix, cw_json_str(c->fix[i]));
		json_array_append_new(kinds, json_string(cw_fix_kind_name(c->fix_kind[i])));
	}
	json_object_set_new(o, "fix", fix);
	json_object_set_new(o, "fix_kinds", kinds);
	json_object_set_new(o, "pid", c->pid ? json_integer(c->pid) : json_null());
	json_object_set_new(o, "tid", c->tid ? json_integer(c->tid) : json_null());
	json_object_set_new(o, "comm", c->comm[0] ? cw_json_str(c->comm) : json_null());
	json_object_set_new(o, "node", cw_json_str(c->node));
	json_object_set_new(o, "rank", c->rank >= 0 ? json_integer(c->rank) : json_null());
	if (c->has_python) {
		json_t *py = json_pack("{s:o, s:i, s:o}", "file", cw_json_str(c->py_file), "line", c->py_line,
				       "function", cw_json_str(c->py_function));

		if (py && c->py_via > 0)
			json_object_set_new(py, "python_via", json_integer(c->py_via));
		json_object_set_new(o, "python", py);
	} else
		json_object_set_new(o, "python", json_null());
	json_object_set_new(o, "stack", stack_to_json(c));
	json_object_set_new(o, "container", cw_tenant_ref_json(&c->container));
	if (c->culprit.known) {
		json_t *cu = json_pack("{s:o, s:I, s:I}", "comm", cw_json_str(c->culprit.comm), "pid",
				       (json_int_t)c->culprit.pid, "overlap_ns",
				       (json_int_t)c->culprit.overlap_ns);
		json_object_set_new(cu, "cgroup_id",
				    c->culprit.cgroup_id ? jint(c->culprit.cgroup_id) : json_null());
		json_object_set_new(cu, "cpu", c->culprit.cpu >= 0 ? json_integer(c->culprit.cpu) : json_null());
		json_object_set_new(cu, "container", cw_tenant_ref_json(&c->culprit.container));
		json_object_set_new(o, "culprit", cu);
	} else {
		json_object_set_new(o, "culprit", json_null());
	}
	for (int i = 0; i < c->nevidence; i++)
		json_object_set_new(ev, c->evidence[i].key,
				    c->evidence[i].is_int ? json_integer((json_int_t)llround(c->evidence[i].value))
							  : jreal(c->evidence[i].value, 1000));
	json_object_set_new(o, "evidence", ev);
	return o;
}

json_t *cw_explain_to_json(const struct cw_explain_result *r)
{
	char from[40], to[40];
	json_t *o = json_object(), *chains = json_array(), *warns = json_array();

	cw_format_time(r->from_wall_ns, from, sizeof(from));
	cw_format_time(r->to_wall_ns, to, sizeof(to));
	json_object_set_new(o, "window",
			    json_pack("{s:I, s:I, s:s, s:s, s:I, s:I, s:I}", "from_ns", (json_int_t)r->from_wall_ns,
				      "to_ns", (json_int_t)r->to_wall_ns, "from", from, "to", to,
				      "ops_analysed", (json_int_t)r->ops_analysed, "calls_analysed",
				      (json_int_t)r->calls_analysed, "calls_failed", (json_int_t)r->calls_failed));
	/* Only where requests were read: other files' windows keep their shape. */
	if (r->requests_analysed)
		json_object_set_new(json_object_get(o, "window"), "requests_analysed", jint(r->requests_analysed));
	for (int i = 0; i < r->count; i++)
		json_array_append_new(chains, cw_chain_to_json(&r->chains[i]));
	json_object_set_new(o, "chains", chains);
	for (int i = 0; i < r->nwarnings; i++)
		json_array_append_new(warns, cw_json_str(r->warnings[i]));
	json_object_set_new(o, "warnings", warns);
	json_object_set_new(o, "losses", cw_losses_to_json(r->losses, r->nlosses));
	/* Only where retention touched the window: older files read as before. */
	if (r->pruned_through_ns || r->stored) {
		json_t *h = json_object();

		json_object_set_new(h, "pruned_through_ns", json_integer((json_int_t)r->pruned_through_ns));
		json_object_set_new(h, "source", json_string(r->pruned_through_ns ? "kept rows" : "raw rows"));
		json_object_set_new(h, "stored_chains", r->stored ? json_incref(r->stored) : json_array());
		json_object_set_new(o, "history", h);
	}
	return o;
}

static void clock_of(uint64_t wall, char *buf, int len)
{
	char full[40];
	const char *t;

	cw_format_time(wall, full, sizeof(full));
	t = strchr(full, 'T');
	snprintf(buf, (size_t)len, "%s", t ? t + 1 : full);
}

int cw_explain_print_text(FILE *f, const struct cw_explain_result *r, int color)
{
	return cw_explain_print_text_stacks(f, r, color, 0);
}

/* A stored chain's text comes from the file (hostile like any trace
 * content): control characters are printed as '?'. */
static void put_plain(FILE *f, const char *s)
{
	(void)cw_term_put(f, s);
}

/* Which rows the window was explained from, and the chains trace stored
 * over it while it ran (docs/explain.md, "Old windows"). */
static void print_history(FILE *f, const struct cw_explain_result *r)
{
	char t[40];
	size_t i;
	json_t *c;

	if (r->pruned_through_ns) {
		cw_format_time(r->pruned_through_ns, t, sizeof(t));
		fprintf(f, "\nhistory: ordinary calls before %s were pruned by the size cap; this window is explained"
			   " from the kept rows (slow, failing, NCCL and first calls, the evidence beside them, the"
			   " per-second aggregates)\n", t);
	}
	if (!r->stored)
		return;
	fprintf(f, "%sstored by trace while it ran (%zu chain%s over this window):\n", r->pruned_through_ns ? "" : "\n",
		json_array_size(r->stored), json_array_size(r->stored) == 1 ? "" : "s");
	json_array_foreach(r->stored, i, c) {
		const char *sev = json_string_value(json_object_get(c, "severity"));
		const char *kind = json_string_value(json_object_get(json_object_get(c, "root_cause"), "kind"));
		const char *sum = json_string_value(json_object_get(json_object_get(c, "root_cause"), "summary"));
		const char *op = json_string_value(json_object_get(c, "op"));

		fputs("  [", f);
		put_plain(f, sev ? sev : "?");
		fputs("] ", f);
		put_plain(f, kind ? kind : "?");
		fputs("  ", f);
		put_plain(f, op ? op : "?");
		fputs(": ", f);
		put_plain(f, sum);
		fputc('\n', f);
	}
}

int cw_explain_print_text_stacks(FILE *f, const struct cw_explain_result *r, int color, int stacks)
{
	FILE *const out = f;
	static const char *const sev_color[] = {"\033[1;31m", "\033[1;33m", "\033[1;36m"};
	char from[40], to[40];

	char failed[96] = "";

	cw_format_time(r->from_wall_ns, from, sizeof(from));
	cw_format_time(r->to_wall_ns, to, sizeof(to));
	/* Failing calls are counted apart from every latency figure. */
	if (r->calls_failed)
		snprintf(failed, sizeof(failed), ", %llu failed", (unsigned long long)r->calls_failed);
	if (r->requests_analysed) {
		size_t n = strlen(failed);

		snprintf(failed + n, sizeof(failed) - n, "; %llu requests", (unsigned long long)r->requests_analysed);
	}
	if (r->count == 0) {
		fprintf(f, "no problems found in %s .. %s (%llu calls over %llu ops analysed%s)\n", from, to,
			(unsigned long long)r->calls_analysed, (unsigned long long)r->ops_analysed, failed);
	} else {
		fprintf(f, "%d causal chain%s in %s .. %s (%llu calls over %llu ops analysed%s)\n", r->count,
			r->count == 1 ? "" : "s", from, to, (unsigned long long)r->calls_analysed,
			(unsigned long long)r->ops_analysed, failed);
	}
	for (int i = 0; i < r->count; i++) {
		const struct cw_chain *c = &r->chains[i];
		char p50[32], p99[32], oneline[800];

		char *body = NULL;
		size_t blen = 0;

		cw_format_duration(c->p50_ns, p50, sizeof(p50));
		cw_format_duration(c->p99_ns, p99, sizeof(p99));
		fprintf(f, "\n%s[%s]%s %s  ", color ? sev_color[c->severity] : "", cw_severity_name(c->severity),
			color ? "\033[0m" : "", cw_kind_name(c->kind));
		/* Everything below holds stored text (a traced process's names, a
		 * RAS listener's hosts): written out escaped (util/term.h). */
		f = open_memstream(&body, &blen);
		if (!f)
			return -ENOMEM;
		fprintf(f, "%s (%s) on %s\n", c->op, c->source, c->node);
		cw_chain_oneline(c, oneline, sizeof(oneline));
		fprintf(f, "  %s\n", oneline);
		if (c->kind == CW_KIND_INFERENCE_LATENCY) {
			char t[32], d[32], tt[32];

			cw_format_duration(c->slow_time_ns, t, sizeof(t));
			cw_format_duration(c->route_dur_p50_ns, d, sizeof(d));
			cw_format_duration(c->route_ttft_p50_ns, tt, sizeof(tt));
			fprintf(f, "  requests %llu, slow %llu, slow time %s, explained %.0f %%", (unsigned long long)c->count,
				(unsigned long long)c->slow_count, t, c->explained_share * 100);
			if (c->route_baseline_slo)
				fprintf(f, "; judged against the objectives (too few requests for a baseline)\n");
			else
				fprintf(f, "; route p50 %s, TTFT p50 %s\n", d, c->route_ttft_p50_ns ? tt : "none");
			for (int k = 0; k < c->nrequests; k++) {
				const struct cw_chain_request *q = &c->requests[k];
				char when[40];

				clock_of(q->wall_ns, when, sizeof(when));
				cw_format_duration(q->dur_ns, d, sizeof(d));
				if (q->ttft_ns >= 0)
					cw_format_duration((uint64_t)q->ttft_ns, tt, sizeof(tt));
				fprintf(f, "  slow    %s at %s: %s%s%s%s total, status %d, pid %lld, thread %lld\n", c->op, when,
					q->ttft_ns >= 0 ? "TTFT " : "", q->ttft_ns >= 0 ? tt : "", q->ttft_ns >= 0 ? ", " : "",
					d, q->status, (long long)q->pid, (long long)q->tid);
			}
		} else if (c->kind == CW_KIND_OOM_KILL) /* an event, not a latency distribution */
			fprintf(f, "  OOM kills in the window: %llu\n", (unsigned long long)c->count);
		else if (c->error_family[0]) /* failing calls: counts, not latency */
			/* The group's totals: over every failing op when there are several. */
			fprintf(f, "  calls %llu, failing %llu (%.0f %%)%s%.0d%s, error %s (%lld), %s\n",
				(unsigned long long)c->count, (unsigned long long)c->slow_count,
				c->count ? 100.0 * (double)c->slow_count / (double)c->count : 0,
				c->nfailed_ops > 1 ? " over " : "", c->nfailed_ops > 1 ? c->nfailed_ops : 0,
				c->nfailed_ops > 1 ? " ops" : "", c->error_name[0] ? c->error_name : "unknown",
				(long long)c->error_code, c->error_family);
		else if (!cw_chain_has_latency(c)) {
			char t[32];

			cw_format_duration(c->slow_time_ns, t, sizeof(t));
			if (!c->slow_time_ns)
				fprintf(f, "  events %llu, explained %.0f %%\n", (unsigned long long)c->count,
					c->explained_share * 100);
			else
				fprintf(f, "  calls %llu, slow %llu, time %s, explained %.0f %%\n",
					(unsigned long long)c->count, (unsigned long long)c->slow_count, t,
					c->explained_share * 100);
		} else
		{
			char exp[32] = "";

			if (c->expected_outside) {
				cw_format_duration(c->expected_ns, exp + 2, sizeof(exp) - 2);
				memcpy(exp, ", ", 2);
			}
			fprintf(f, "  calls %llu, slow %llu, p50 %s, p99 %s, tail %.1fx%s%s%s, explained %.0f %%\n",
				(unsigned long long)c->count, (unsigned long long)c->slow_count, p50, p99,
				c->tail_ratio, exp[0] ? ", expected ~" : "", exp[0] ? exp + 2 : "",
				exp[0] ? " (outside the window)" : "", c->explained_share * 100);
		}
		if (c->pid) {
			fprintf(f, "  process pid %lld, tid %lld (%s)", (long long)c->pid, (long long)c->tid,
				c->comm);
			if (c->rank >= 0)
				fprintf(f, ", rank %d", c->rank);
			fputc('\n', f);
		}
		if (cw_tenant_is_workload(&c->container)) {
			char who[200];

			cw_tenant_ref_name(&c->container, who, sizeof(who));
			fprintf(f, "  tenant  %s (cgroup %s)\n", who, c->container.cgroup);
		}
		if (c->has_python && c->py_via > 0)
			fprintf(f, "  python  %s() at %s:%d  (attributed: thread %lld waits on this call's thread)\n",
				c->py_function, c->py_file, c->py_line, (long long)c->py_via);
		else if (c->has_python)
			fprintf(f, "  python  %s() at %s:%d\n", c->py_function, c->py_file, c->py_line);
		if (c->because[0] && c->kind != CW_KIND_NCCL_WAIT)
			fprintf(f, "  because %s\n", c->because);
		for (int k = 0; c->kind == CW_KIND_NCCL_HANG && k < c->nmissing && k < CW_CHAIN_MAX_MISSING; k++)
			fprintf(f, "  missing %s\n", c->missing_state[k]);
		if (c->kind == CW_KIND_NCCL_HANG && c->nwavefront) {
			fprintf(f, "  wavefront at collective #%lld (%d of %d ranks shown)\n", (long long)c->seq,
				c->nwavefront, c->nwavefront_total);
			for (int k = 0; k < c->nwavefront; k++) {
				char line[1200];

				wavefront_text(&c->wavefront[k], line, sizeof(line));
				fprintf(f, "    %s\n", line);
			}
		}
		if (c->kind == CW_KIND_NCCL_HANG) {
			char line[1600];

			cw_chain_ras_text(c, line, sizeof(line));
			fputs("  nccl ras ", f);
			put_plain(f, line);
			fputc('\n', f);
		}
		if (c->nthreads) {
			fprintf(f, "  threads (%s, %d of %d)\n", !strcmp(c->threads_from, "stall") ? "when trace named the stall"
				: "at the end of the trace", c->nthreads, c->nthreads_total);
			for (int k = 0; k < c->nthreads; k++) {
				char line[600];

				cw_chain_thread_text(&c->threads[k], line, sizeof(line));
				fprintf(f, "    %s\n", line);
			}
		}
		if (c->caused_by.kind[0]) {
			fprintf(f, "  caused by %s: ", c->caused_by.kind);
			if (c->caused_by.rank >= 0)
				fprintf(f, "rank %d, ", c->caused_by.rank);
			fprintf(f, "pid %lld on %s\n", (long long)c->caused_by.pid, c->caused_by.node);
		}
		if (stacks) {
			char line[512];

			fprintf(f, "  stack (representative slow call, innermost first)%s\n",
				c->nstack ? "" : ": none recorded");
			for (int k = 0; k < c->nstack; k++) {
				cw_stack_frame_text(&c->stack[k], line, sizeof(line));
				fprintf(f, "    %s\n", line);
			}
		}
		if (c->ntimeline) {
			fprintf(f, "  timeline\n");
			for (int k = 0; k < c->ntimeline; k++) {
				char t[40];
				clock_of(c->timeline[k].t_ns, t, sizeof(t));
				fprintf(f, "    %-14s %-7s %s\n", t, cw_layer_name(c->timeline[k].layer),
					c->timeline[k].text);
			}
		}
		if (c->nfix) {
			fprintf(f, "  fix\n");
			for (int k = 0; k < c->nfix; k++)
				fprintf(f, "    %s %s\n", c->fix_kind[k] == CW_FIX_ADVICE ? "-" : c->fix_kind[k] == CW_FIX_CODE ? ">>>" : "$",
					c->fix[k]);
		}
		if (fclose(f)) {
			free(body);
			return -ENOMEM;
		}
		f = out;
		(void)cw_term_put_lines(f, body);
		free(body);
	}
	print_history(f, r);
	for (int i = 0; i < r->nwarnings; i++)
		fprintf(f, "%swarning: %s\n", i == 0 ? "\n" : "", r->warnings[i]);
	return ferror(f) ? -EIO : 0;
}

int cw_explain_insert_chains(sqlite3 *db, const struct cw_explain_result *r, uint64_t now_wall_ns)
{
	static const char sql[] =
		"INSERT INTO chains (node, created_wall_ns, from_wall_ns, to_wall_ns, severity, kind, op,"
		" count, slow_count, p50_ns, p99_ns, tail_ratio, explained_share, pid, tid, rank,"
		" python_file, python_line, python_function, summary, json)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)";
	sqlite3_stmt *st = NULL;
	int rc, ret = 0, n = 0;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	for (int i = 0; i < r->count; i++) {
		const struct cw_chain *c = &r->chains[i];
		json_t *j = cw_chain_to_json(c);
		char *txt = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;

		json_decref(j);
		if (!txt) {
			ret = -ENOMEM;
			goto out;
		}
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		sqlite3_bind_text(st, 1, c->node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)now_wall_ns);
		sqlite3_bind_int64(st, 3, (int64_t)r->from_wall_ns);
		sqlite3_bind_int64(st, 4, (int64_t)r->to_wall_ns);
		sqlite3_bind_text(st, 5, cw_severity_name(c->severity), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, cw_kind_name(c->kind), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 7, c->op, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 8, (int64_t)c->count);
		sqlite3_bind_int64(st, 9, (int64_t)c->slow_count);
		sqlite3_bind_int64(st, 10, (int64_t)c->p50_ns);
		sqlite3_bind_int64(st, 11, (int64_t)c->p99_ns);
		sqlite3_bind_double(st, 12, c->tail_ratio);
		sqlite3_bind_double(st, 13, c->explained_share);
		if (c->pid)
			sqlite3_bind_int64(st, 14, c->pid);
		if (c->tid)
			sqlite3_bind_int64(st, 15, c->tid);
		if (c->rank >= 0)
			sqlite3_bind_int(st, 16, c->rank);
		if (c->has_python) {
			sqlite3_bind_text(st, 17, c->py_file, -1, SQLITE_STATIC);
			sqlite3_bind_int(st, 18, c->py_line);
			sqlite3_bind_text(st, 19, c->py_function, -1, SQLITE_STATIC);
		}
		sqlite3_bind_text(st, 20, c->summary, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 21, txt, -1, free);
		rc = sqlite3_step(st);
		if (rc != SQLITE_DONE) {
			ret = cw_sqlite_db_errno(db, rc);
			goto out;
		}
		n++;
	}
out:
	sqlite3_finalize(st);
	return ret < 0 ? ret : n;
}

int cw_explain_store_chains(sqlite3 *db, const struct cw_explain_result *r, uint64_t now_wall_ns)
{
	int rc, ret;

	if (r->count == 0)
		return 0;
	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	ret = cw_explain_insert_chains(db, r, now_wall_ns);
	if (ret >= 0) {
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			ret = cw_sqlite_db_errno(db, rc);
	}
	/* SQLite may have rolled back already (a full disk): a second
	 * ROLLBACK would only replace the error with "no transaction". */
	if (ret < 0 && !sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

int cw_explain_warn(struct cw_explain_result *r, const char *fmt, ...)
{
	char buf[512], **nv;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	nv = realloc(r->warnings, (size_t)(r->nwarnings + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	r->warnings = nv;
	if (!(nv[r->nwarnings] = strdup(buf)))
		return -ENOMEM;
	r->nwarnings++;
	return 0;
}

void cw_explain_result_free(struct cw_explain_result *r)
{
	if (!r)
		return;
	free(r->chains);
	for (int i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->losses);
	json_decref(r->stored);
	memset(r, 0, sizeof(*r));
}
