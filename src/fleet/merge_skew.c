/* Clock skew between the nodes of a merged database, from NCCL collectives.
 *
 * Every rank of a communicator leaves a blocking collective at the same
 * instant (when the last rank's data has arrived), so the completion times
 * (wall_ns + duration_ns) of the k-th collective on two nodes differ by
 * the offset between their clocks plus network jitter; a straggler changes
 * when ranks enter, not when they leave. Per node the process with the
 * most collectives stands for the node. Completion times are matched by
 * index, trying index shifts because tracing may have started at a
 * different collective on each node; the median difference is the offset
 * and the 90th percentile of the absolute deviations its spread.
 *
 * Asynchronous collectives (enqueue and return, PyTorch's default) end
 * when their rank entered them; there the host waits in the synchronize
 * that follows, and it is the completion of that synchronize that lines
 * up across ranks. Both signals are aligned and the tighter one is kept.
 * An offset is only measurable modulo a repeating step pattern; the
 * smallest candidate is taken (clocks within half a step, as NTP keeps
 * them). Where both nodes have nccl_calls rows (schema v3), the k-th
 * collective of a communicator is known on each by its sequence number:
 * their completions are paired exactly and no step pattern can fool the
 * offset, so that signal wins when it has enough pairs. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/merge.h"
#include "store/store.h"

#define COLLECTIVES "('ncclAllReduce','ncclAllGather','ncclReduceScatter','ncclBroadcast','ncclReduce','ncclBcast')"
#define SYNCS                                                                                            \
	"('cudaStreamSynchronize','cudaDeviceSynchronize','cudaEventSynchronize','cuStreamSynchronize'," \
	"'cuCtxSynchronize','cuEventSynchronize')"
#define MAX_SAMPLES 20000
#define MAX_SHIFT 64
#define SPREAD_SLACK_NS 1000000

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median_sorted(const int64_t *v, size_t n)
{
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

int cw_merge_align(const int64_t *ref, size_t nref, const int64_t *other, size_t nother, int max_shift,
		   struct cw_skew_align *out)
{
	size_t cap = nref < nother ? nref : nother, maxover = 0;
	struct cw_skew_align *cand;
	int64_t *d = NULL;
	int ncand = 0, best = -1, ret = -ENODATA;

	memset(out, 0, sizeof(*out));
	if (cap < 3)
		return -ENODATA;
	cand = calloc((size_t)(2 * max_shift + 1), sizeof(*cand));
	d = malloc(cap * sizeof(*d));
	if (!cand || !d) {
		ret = -ENOMEM;
		goto out;
	}
	for (int s = -max_shift; s <= max_shift; s++) {
		size_t n = 0;
		for (size_t k = 0; k < nref; k++) {
			int64_t j = (int64_t)k + s;
			if (j < 0)
				continue;
			if ((size_t)j >= nother)
				break;
			d[n++] = other[j] - ref[k];
		}
		if (n < 3)
			continue;
		qsort(d, n, sizeof(*d), cmp_i64);
		int64_t med = median_sorted(d, n);
		for (size_t k = 0; k < n; k++)
			d[k] = d[k] > med ? d[k] - med : med - d[k];
		qsort(d, n, sizeof(*d), cmp_i64);
		/* The 90th percentile of the deviations, not their median: a
		 * wrong shift can still line up more than half of the steps
		 * when the step pattern repeats. */
		cand[ncand++] = (struct cw_skew_align){ .offset_ns = med, .spread_ns = d[(n * 9) / 10], .shift = s,
						   .samples = (int)n };
		if (n > maxover)
			maxover = n;
	}
	/* A shift that overlaps only a few collectives can look tight by
	 * chance; only shifts covering at least half the best overlap count. */
	int64_t minspread = INT64_MAX;
	for (int i = 0; i < ncand; i++)
		if ((size_t)cand[i].samples * 2 >= maxover && cand[i].spread_ns < minspread)
			minspread = cand[i].spread_ns;
	for (int i = 0; i < ncand; i++) {
		const struct cw_skew_align *c = &cand[i];
		int64_t a = c->offset_ns < 0 ? -c->offset_ns : c->offset_ns, b;
		if ((size_t)c->samples * 2 < maxover || c->spread_ns > 2 * minspread + SPREAD_SLACK_NS)
			continue;
		out->candidates++;
		if (best < 0) {
			best = i;
			continue;
		}
		b = cand[best].offset_ns < 0 ? -cand[best].offset_ns : cand[best].offset_ns;
		if (a < b || (a == b && c->samples > cand[best].samples))
			best = i;
	}
	if (best >= 0) {
		int ncand_ok = out->candidates;
		*out = cand[best];
		out->candidates = ncand_ok;
		ret = 0;
	}
out:
	free(cand);
	free(d);
	return ret;
}

/* Completion times of the node's busiest collective process: of its
 * collectives (v[0]), and of the first synchronize its thread called after
 * each collective (v[1]). Blocking collectives line up on v[0];
 * asynchronous ones (enqueue and return) on v[1], where the host waits. */
static int load_series(sqlite3 *db, const char *node, int64_t *v[2], size_t n[2])
{
	static const char pick[] =
		"SELECT pid FROM events WHERE node = ?1 AND source = 'nccl' AND op IN " COLLECTIVES
		" AND ret IS NOT NULL GROUP BY pid ORDER BY count(*) DESC, pid LIMIT 1";
	static const char series[] =
		"SELECT tid, wall_ns + duration_ns, source = 'nccl' FROM events WHERE node = ?1 AND pid = ?2"
		" AND ((source = 'nccl' AND op IN " COLLECTIVES ") OR op IN " SYNCS ") AND ret IS NOT NULL"
		" ORDER BY wall_ns LIMIT 60000";
	sqlite3_stmt *st = NULL;
	int64_t pid, pending = -1;
	int rc;

	v[0] = v[1] = NULL;
	n[0] = n[1] = 0;
	if ((rc = sqlite3_prepare_v2(db, pick, -1, &st, NULL)) != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
	}
	pid = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if ((rc = sqlite3_prepare_v2(db, series, -1, &st, NULL)) != SQLITE_OK)
		return cw_sqlite_errno(rc);
	v[0] = malloc(MAX_SAMPLES * sizeof(*v[0]));
	v[1] = malloc(MAX_SAMPLES * sizeof(*v[1]));
	if (!v[0] || !v[1]) {
		sqlite3_finalize(st);
		free(v[0]);
		free(v[1]);
		v[0] = v[1] = NULL;
		return -ENOMEM;
	}
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t tid = sqlite3_column_int64(st, 0), end = sqlite3_column_int64(st, 1);
		if (sqlite3_column_int(st, 2)) {
			if (n[0] < MAX_SAMPLES)
				v[0][n[0]++] = end;
			pending = tid;
		} else if (pending == tid) {
			if (n[1] < MAX_SAMPLES)
				v[1][n[1]++] = end;
			pending = -1;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v[0]);
		free(v[1]);
		v[0] = v[1] = NULL;
		n[0] = n[1] = 0;
		return cw_sqlite_errno(rc);
	}
	/* Ordered by entry; completion order is what matches across nodes. */
	qsort(v[0], n[0], sizeof(*v[0]), cmp_i64);
	qsort(v[1], n[1], sizeof(*v[1]), cmp_i64);
	return 0;
}

const char *cw_merge_skew_signal(const struct cw_merge_skew *k)
{
	return k->after_sync == 2 ? "nccl sequence" : k->after_sync ? "synchronize after collective" : "collective";
}

/* Offset of node against ref from completions of the same (communicator,
 * sequence number); -ENODATA with fewer than 3 pairs. */
static int seq_offset(sqlite3 *db, const char *ref, const char *node, struct cw_skew_align *out)
{
	static const char sql[] =
		"SELECT a.done_wall_ns - b.done_wall_ns FROM nccl_calls a JOIN nccl_calls b"
		" ON b.comm_id = a.comm_id AND b.seq = a.seq AND b.node = ?2"
		" WHERE a.node = ?1 AND a.comm_id IS NOT NULL AND a.done_wall_ns IS NOT NULL"
		" AND b.done_wall_ns IS NOT NULL AND a.op NOT IN ('ncclSend', 'ncclRecv') LIMIT 20000";
	sqlite3_stmt *st = NULL;
	int64_t *d = malloc(20000 * sizeof(*d));
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!d)
		return -ENOMEM;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		free(d);
		return -ENODATA; /* an older schema: no nccl_calls */
	}
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, ref, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < 20000)
		d[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (n < 3) {
		free(d);
		return -ENODATA;
	}
	qsort(d, n, sizeof(*d), cmp_i64);
	out->offset_ns = median_sorted(d, n);
	for (size_t k = 0; k < n; k++)
		d[k] = d[k] > out->offset_ns ? d[k] - out->offset_ns : out->offset_ns - d[k];
	qsort(d, n, sizeof(*d), cmp_i64);
	out->spread_ns = d[(size_t)(0.9 * (double)(n - 1))];
	out->samples = (int)n;
	out->candidates = 1;
	free(d);
	return 0;
}

int cw_merge_estimate_skew(sqlite3 *db, struct cw_merge_result *r)
{
	int64_t *ref[2] = { NULL, NULL }, *cur[2] = { NULL, NULL };
	size_t nref[2] = { 0, 0 }, ncur[2];
	int refi = -1, ret = 0, *order;

	free(r->skew);
	r->reference[0] = '\0';
	if (!(r->skew = calloc((size_t)(r->nnodes ? r->nnodes : 1), sizeof(*r->skew))))
		return -ENOMEM;
	/* Nodes are compared with the first one by name that has collectives. */
	if (!(order = malloc((size_t)(r->nnodes ? r->nnodes : 1) * sizeof(*order))))
		return -ENOMEM;
	for (int i = 0; i < r->nnodes; i++) {
		int j = i;
		snprintf(r->skew[i].node, sizeof(r->skew[i].node), "%s", r->nodes[i].name);
		while (j > 0 && strcmp(r->nodes[order[j - 1]].name, r->nodes[i].name) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (int k = 0; k < r->nnodes && ret >= 0; k++) {
		int i = order[k];
		struct cw_skew_align a[2];
		int ok[2];

		if ((ret = load_series(db, r->nodes[i].name, cur, ncur)) < 0)
			break;
		if (refi < 0) {
			if (ncur[0] >= 3) {
				refi = i;
				for (int s = 0; s < 2; s++) {
					ref[s] = cur[s];
					nref[s] = ncur[s];
					cur[s] = NULL;
				}
				r->skew[i].known = 1;
				r->skew[i].samples = (int)nref[0];
				snprintf(r->reference, sizeof(r->reference), "%s", r->nodes[i].name);
			}
		} else {
			/* Whichever signal lines up tighter: collective completions
			 * (blocking) or the synchronize after them (asynchronous). */
			for (int s = 0; s < 2; s++)
				ok[s] = cw_merge_align(ref[s], nref[s], cur[s], ncur[s], MAX_SHIFT, &a[s]) == 0;
			/* A signal that fits at several offsets (a periodic step
			 * pattern) loses to one that fits at one. */
			int b = 0;
			if (ok[1] && !ok[0])
				b = 1;
			else if (ok[0] && ok[1])
				b = (a[1].candidates == 1) != (a[0].candidates == 1) ? a[1].candidates == 1
										      : a[1].spread_ns < a[0].spread_ns;
			struct cw_skew_align sq;
			if (seq_offset(db, r->nodes[refi].name, r->nodes[i].name, &sq) == 0) {
				a[b] = sq;
				ok[b] = 1;
				r->skew[i].after_sync = 2;
			} else if (ok[b]) {
				r->skew[i].after_sync = b;
			}
			if (ok[b]) {
				r->skew[i].known = 1;
				r->skew[i].offset_ns = a[b].offset_ns;
				r->skew[i].spread_ns = a[b].spread_ns;
				r->skew[i].samples = a[b].samples;
			}
		}
		for (int s = 0; s < 2; s++) {
			free(cur[s]);
			cur[s] = NULL;
		}
	}
	free(ref[0]);
	free(ref[1]);
	free(order);
	return ret < 0 ? ret : 0;
}
