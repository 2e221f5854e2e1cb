/* throughput_drop: the op's per-second rate falls below 0.6x its peak
 * (the 90th percentile of its per-second counts, robust to one burst) for
 * >= 3 consecutive seconds while its mean latency in that stretch is
 * >= 1.5x the mean outside it. The first and last second of the window
 * are partial and ignored. This names the symptom when no per-call cause
 * explains the slow time; explained_share = share of the slow calls that
 * fall inside the stretch. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

#define CW_DROP_FACTOR 0.6
#define CW_DROP_MIN_SECONDS 3
#define CW_DROP_LATENCY 1.5

int cw_rule_throughput_drop(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	const struct cw_opstat *st = ctx->st;
	double *counts, peak, lat_in, lat_out;
	size_t n = st->nsecs, best_s = 0, best_len = 0, run_s = 0, run_len = 0;
	uint64_t in_c = 0, in_ns = 0, out_c = 0, out_ns = 0, in_slow = 0;
	char head[128];

	if (n < CW_DROP_MIN_SECONDS + 2 || !ctx->slow_time_ns)
		return 0;
	counts = malloc(n * sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		counts[i] = (double)st->secs[i].count;
	cw_median(counts, n); /* sorts */
	peak = counts[(size_t)((double)(n - 1) * 0.9)];
	free(counts);
	/* Seconds with no row at all are zero-rate seconds too. */
	for (size_t i = 1; i + 1 < n; i++) {
		int low = (double)st->secs[i].count < CW_DROP_FACTOR * peak;
		int contiguous = i > 1 && st->secs[i].second == st->secs[i - 1].second + 1;
		if (low && run_len && contiguous) {
			run_len++;
		} else if (low) {
			run_s = i;
			run_len = 1;
		} else {
			run_len = 0;
		}
		if (run_len > best_len) {
			best_len = run_len;
			best_s = run_s;
		}
	}
	if (best_len < CW_DROP_MIN_SECONDS)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (i >= best_s && i < best_s + best_len) {
			in_c += st->secs[i].count;
			in_ns += st->secs[i].sum_ns;
		} else {
			out_c += st->secs[i].count;
			out_ns += st->secs[i].sum_ns;
		}
	}
	if (!in_c || !out_c)
		return 0;
	lat_in = (double)in_ns / (double)in_c;
	lat_out = (double)out_ns / (double)out_c;
	if (lat_in < CW_DROP_LATENCY * lat_out)
		return 0;
	int64_t s0 = st->secs[best_s].second, s1 = st->secs[best_s + best_len - 1].second;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		int64_t sec = (int64_t)(ctx->calls[i].wall_ns / NSEC_PER_SEC);
		if (sec >= s0 && sec <= s1)
			in_slow += ctx->calls[i].dur_ns;
	}
	c->kind = CW_KIND_THROUGHPUT_DROP;
	c->explained_share = (double)in_slow / (double)ctx->slow_time_ns;
	cw_chain_headline(c, head, sizeof(head));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: the call rate fell to %.0f %% of its peak (%.0f/s) for %zu s while mean latency rose"
		 " %.1fx; no off-CPU, I/O or memory cause was measured for the slow calls",
		 head, (double)in_c / (double)best_len / peak * 100, peak, best_len, lat_in / lat_out);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), (uint64_t)s0 * NSEC_PER_SEC,
			      "rate drops below %.0f/s", CW_DROP_FACTOR * peak);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), (uint64_t)(s1 + 1) * NSEC_PER_SEC,
			      "rate recovers");
	cw_chain_add_fix(c, "causeway explain --from %lld --to %lld --per-process", (long long)s0,
			 (long long)(s1 + 1));
	cw_chain_add_fix(c, "nvidia-smi -q -d PERFORMANCE,CLOCK  # thermal or power throttling");
	cw_chain_add_evidence(c, "drop_seconds", (double)best_len, 1);
	cw_chain_add_evidence(c, "peak_per_s", peak, 0);
	cw_chain_add_evidence(c, "latency_ratio", lat_in / lat_out, 0);
	return 1;
}
