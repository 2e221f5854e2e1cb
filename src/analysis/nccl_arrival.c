#include "analysis/nccl_arrival.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/events.h"

static int cmp_call(const void *a, const void *b)
{
	const struct cw_nccl_call *x = a, *y = b;

	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int cmp_late(const void *a, const void *b)
{
	const struct cw_nccl_late *x = a, *y = b;
	return x->lag_ns > y->lag_ns ? -1 : x->lag_ns < y->lag_ns;
}

double cw_nccl_busbw_factor(int op, int n)
{
	if (n < 2)
		return 0;
	switch (op) {
	case CW_OP_ncclAllReduce:
		return 2.0 * (n - 1) / n;
	case CW_OP_ncclAllGather:
	case CW_OP_ncclReduceScatter:
	case CW_OP_ncclAlltoAll:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}

int64_t cw_nccl_total_bytes(int op, int64_t bytes, int n)
{
	/* AllGather's count is what each rank sends, ReduceScatter's what
	 * each receives: the collective's size is n times that. */
	if (op == CW_OP_ncclAllGather || op == CW_OP_ncclReduceScatter || op == CW_OP_ncclAlltoAll)
		return bytes * n;
	return bytes;
}

/* The group [lo, hi) of one collective: lag of the last rank, waits. */
static void one_group(const struct cw_nccl_call *c, size_t lo, size_t hi, struct cw_nccl_rank *ranks,
		      struct cw_nccl_arrival *out, int64_t *lagv, int64_t *transfer)
{
	size_t last = hi - 1;
	int64_t lag = hi - lo >= 2 ? c[last].entry - c[last - 1].entry : 0, tr = INT64_MAX;

	for (size_t i = lo; i < hi; i++)
		ranks[c[i].rank_idx].groups++;
	for (size_t i = lo; i < hi; i++)
		if (c[i].done != INT64_MIN && c[i].done >= c[i].entry) {
			ranks[c[i].rank_idx].wait_ns += (uint64_t)(c[i].done - c[i].entry);
			if (c[i].done - c[i].entry < tr)
				tr = c[i].done - c[i].entry;
		}
	*transfer = tr == INT64_MAX ? -1 : tr;
	*lagv = 0;
	if (lag >= (int64_t)CW_NCCL_MIN_LAG_NS) {
		ranks[c[last].rank_idx].late++;
		ranks[c[last].rank_idx].lag_ns += (uint64_t)lag;
		out->total_lag_ns += (uint64_t)lag;
		*lagv = lag;
	}
}

/* The index of comm_id in ids (present), starting from *last: consecutive
 * calls mostly share a communicator. */
static int comm_index(const int64_t *ids, int *last, int64_t comm_id)
{
	int k = *last >= 0 && ids[*last] == comm_id ? *last : 0;

	while (ids[k] != comm_id)
		k++;
	*last = k;
	return k;
}

/* Sorts by (comm_id, seq, entry) in linear time: a counting sort by
 * sequence number per communicator (sequence numbers are dense: every
 * rank counts 1, 2, 3, ...), then the few calls of each collective by
 * entry. Falls back to qsort for many communicators or sparse numbers.
 * On a million calls this is a fraction of qsort's time, which was a
 * quarter of the analysis. */
#define SORT_MAX_COMMS 64
static int sort_calls(struct cw_nccl_call *c, size_t n)
{
	int64_t ids[SORT_MAX_COMMS], lo[SORT_MAX_COMMS], hi[SORT_MAX_COMMS];
	size_t cnt[SORT_MAX_COMMS] = { 0 }, base[SORT_MAX_COMMS], span = 0, *pos = NULL;
	struct cw_nccl_call *out = NULL;
	int nc = 0, last = -1;

	for (size_t i = 0; i < n; i++) {
		int k = last >= 0 && ids[last] == c[i].comm_id ? last : -1;

		for (int j = 0; k < 0 && j < nc; j++)
			if (ids[j] == c[i].comm_id)
				k = j;
		if (k < 0) {
			if (nc == SORT_MAX_COMMS)
				goto fallback;
			k = nc++;
			ids[k] = c[i].comm_id;
			lo[k] = hi[k] = c[i].seq;
		}
		last = k;
		cnt[k]++;
		if (c[i].seq < lo[k])
			lo[k] = c[i].seq;
		if (c[i].seq > hi[k])
			hi[k] = c[i].seq;
	}
	/* Communicators in id order, each a dense range of numbers. */
	for (int a = 1; a < nc; a++)
		for (int b = a; b > 0 && ids[b - 1] > ids[b]; b--) {
			int64_t t;
			size_t u;
			t = ids[b], ids[b] = ids[b - 1], ids[b - 1] = t;
			t = lo[b], lo[b] = lo[b - 1], lo[b - 1] = t;
			t = hi[b], hi[b] = hi[b - 1], hi[b - 1] = t;
			u = cnt[b], cnt[b] = cnt[b - 1], cnt[b - 1] = u;
		}
	for (int k = 0; k < nc; k++) {
		if ((uint64_t)(hi[k] - lo[k]) >= 4 * (uint64_t)cnt[k] + 16)
			goto fallback;
		base[k] = span;
		span += (size_t)(hi[k] - lo[k] + 1);
	}
	pos = calloc(span + 1, sizeof(*pos));
	out = malloc(n * sizeof(*out));
	if (!pos || !out) {
		free(pos);
		free(out);
		return -ENOMEM;
	}
	last = -1;
	for (size_t i = 0; i < n; i++) {
		int k = comm_index(ids, &last, c[i].comm_id);

		pos[base[k] + (size_t)(c[i].seq - lo[k]) + 1]++;
	}
	for (size_t b = 1; b <= span; b++)
		pos[b] += pos[b - 1];
	last = -1;
	for (size_t i = 0; i < n; i++) {
		int k = comm_index(ids, &last, c[i].comm_id);

		out[pos[base[k] + (size_t)(c[i].seq - lo[k])]++] = c[i];
	}
	/* Within a collective, by entry (a few ranks: insertion sort). */
	for (size_t i = 1; i < n; i++) {
		struct cw_nccl_call t = out[i];
		size_t j = i;

		while (j > 0 && out[j - 1].comm_id == t.comm_id && out[j - 1].seq == t.seq && out[j - 1].entry > t.entry) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = t;
	}
	memcpy(c, out, n * sizeof(*c));
	free(out);
	free(pos);
	return 0;
fallback:
	qsort(c, n, sizeof(*c), cmp_call);
	return 0;
}

int cw_nccl_arrival_analyse(struct cw_nccl_call *c, size_t n, struct cw_nccl_rank *ranks, int nranks,
			    int64_t observed_until, uint64_t hang_min_ns, struct cw_nccl_arrival *out)
{
	int64_t *starts = NULL, *lags = NULL, *transfers = NULL;
	double *bw = NULL, *shares = NULL;
	int32_t *gstart_rank = NULL;
	size_t ng = 0, nbw = 0, i, j;
	int *opcount = NULL, ret = 0;
	uint8_t *seen = NULL;

	memset(out, 0, sizeof(*out));
	out->straggler = -1;
	out->comm_op = CW_OP_ncclAllReduce;
	for (int r = 0; r < nranks; r++) {
		ranks[r].calls = ranks[r].late = ranks[r].lag_ns = ranks[r].wait_ns = ranks[r].step_ns = 0;
		ranks[r].waited_ns = ranks[r].groups = 0;
		ranks[r].first_entry = INT64_MAX;
		ranks[r].last_entry = INT64_MIN;
		ranks[r].last_seq = 0;
	}
	if (!n || nranks <= 0)
		return 0;
	if ((ret = sort_calls(c, n)) < 0)
		return ret;
	starts = malloc(n * sizeof(*starts));
	lags = malloc(n * sizeof(*lags));
	transfers = malloc(n * sizeof(*transfers));
	gstart_rank = malloc(n * sizeof(*gstart_rank));
	bw = malloc(n * sizeof(*bw));
	shares = malloc((size_t)nranks * sizeof(*shares));
	seen = calloc((size_t)nranks, 1);
	opcount = calloc(CW_OP_MAX, sizeof(*opcount));
	if (!starts || !lags || !transfers || !gstart_rank || !bw || !shares || !seen || !opcount) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct cw_nccl_rank *r = &ranks[c[i].rank_idx];

		r->calls++;
		if (c[i].entry < r->first_entry)
			r->first_entry = c[i].entry;
		if (c[i].entry > r->last_entry)
			r->last_entry = c[i].entry;
		if ((unsigned)c[i].op < CW_OP_MAX)
			opcount[c[i].op]++;
	}
	for (int k = 0; k < CW_OP_MAX; k++)
		if (opcount[k] > opcount[out->comm_op])
			out->comm_op = k;
	/* One communicator at a time: its membership is every rank seen on
	 * it, and its last collective may be the one some never entered. */
	for (i = 0; i < n; i = j) {
		size_t k, gi = ng, members = 0, lastlo = i;
		int64_t comm = c[i].comm_id, maxseq = 0;

		memset(seen, 0, (size_t)nranks);
		for (j = i; j < n && c[j].comm_id == comm; j++) {
			if (!seen[c[j].rank_idx]) {
				seen[c[j].rank_idx] = 1;
				members++;
			}
			if (c[j].seq > ranks[c[j].rank_idx].last_seq)
				ranks[c[j].rank_idx].last_seq = c[j].seq;
			if (c[j].seq > maxseq)
				maxseq = c[j].seq;
		}
		/* Members that joined by ncclCommInitRank and never entered. */
		for (int r = 0; r < nranks; r++)
			if (!seen[r] && ranks[r].init_comm && ranks[r].init_comm == comm) {
				seen[r] = 1;
				members++;
			}
		for (k = i; k < j;) {
			size_t e = k;

			while (e < j && c[e].seq == c[k].seq)
				e++;
			out->groups++;
			lastlo = k;
			if (e - k == members && members >= 2) {
				out->complete++;
				starts[ng] = c[k].entry;
				gstart_rank[ng] = c[k].rank_idx;
				one_group(c, k, e, ranks, out, &lags[ng], &transfers[ng]);
				if (transfers[ng] > 0 && c[k].bytes > 0) {
					int64_t tb = cw_nccl_total_bytes(c[k].op, c[k].bytes, (int)members);

					bw[nbw++] = (double)tb * cw_nccl_busbw_factor(c[k].op, (int)members) /
						    (double)transfers[ng];
				}
				ng++;
			}
			k = e;
		}
		/* The step: the median gap between the communicator's
		 * consecutive complete collectives. */
		if (ng - gi >= 2) {
			int64_t *gaps = malloc((ng - gi) * sizeof(*gaps));
			size_t ngap = 0;

			if (!gaps) {
				ret = -ENOMEM;
				goto out;
			}
			for (k = gi + 1; k < ng; k++)
				gaps[ngap++] = starts[k] - starts[k - 1];
			qsort(gaps, ngap, sizeof(*gaps), cmp_i64);
			if (!out->median_step_ns || gaps[ngap / 2] > out->median_step_ns)
				out->median_step_ns = gaps[ngap / 2];
			free(gaps);
		}
		/* A hang: the last collective lacks members. */
		if (!out->hang && members >= 2) {
			size_t cnt = 0;

			for (k = lastlo; k < j; k++)
				cnt++;
			if (cnt < members && c[lastlo].seq == maxseq) {
				uint64_t thr = (uint64_t)CW_NCCL_HANG_STEPS * (uint64_t)out->median_step_ns;
				uint64_t floor = hang_min_ns ? hang_min_ns : CW_NCCL_HANG_MIN_NS;
				int64_t until = 0, waited;

				/* The newest end among the communicator's nodes: a
				 * node whose trace went on longer says nothing of
				 * this job. */
				for (int r = 0; r < nranks; r++)
					if (seen[r] && ranks[r].node_end > until)
						until = ranks[r].node_end;
				if (!until || until > observed_until)
					until = observed_until;
				waited = until - c[lastlo].entry;

				if (thr < floor)
					thr = floor;
				out->hang_threshold_ns = thr;
				if (waited >= (int64_t)thr) {
					uint8_t in_last[CW_NCCL_MAX_RANKS] = {0};

					out->hang = 1;
					out->hang_comm = comm;
					out->hang_seq = maxseq;
					out->hang_started = c[lastlo].entry;
					out->hang_for_ns = waited;
					out->hang_until = until;
					out->hang_members = (int)members;
					for (int r = 0; r < nranks && r < CW_NCCL_MAX_RANKS; r++)
						out->hang_member[r] = seen[r];
					for (k = lastlo; k < j; k++)
						if (c[k].rank_idx < CW_NCCL_MAX_RANKS)
							in_last[c[k].rank_idx] = 1;
					for (int r = 0; r < nranks && r < CW_NCCL_MAX_RANKS; r++)
						if (seen[r] && !in_last[r] && out->nmissing < 16)
							out->missing[out->nmissing++] = r;
				}
			}
		}
	}
	/* The straggler, and its late collectives (largest lags kept). */
	{
		int s = -1;

		for (int r = 0; r < nranks; r++)
			if (ranks[r].lag_ns && (s < 0 || ranks[r].lag_ns > ranks[s].lag_ns))
				s = r;
		if (s >= 0 && ranks[s].late >= CW_NCCL_MIN_LATE &&
		    (double)ranks[s].lag_ns >= CW_NCCL_MIN_LAG_SHARE * (double)out->total_lag_ns &&
		    ranks[s].lag_ns / ranks[s].late >= CW_NCCL_MIN_MEAN_LAG_NS)
			out->straggler = s;
	}
	if (out->straggler >= 0) {
		struct cw_nccl_late *all = malloc(n * sizeof(*all));
		size_t g = 0;

		if (!all) {
			ret = -ENOMEM;
			goto out;
		}
		for (i = 0; i < n; i = j) {
			for (j = i; j < n && c[j].comm_id == c[i].comm_id && c[j].seq == c[i].seq; j++)
				;
			if (j - i >= 2 && c[j - 1].rank_idx == out->straggler &&
			    c[j - 1].entry - c[j - 2].entry >= (int64_t)CW_NCCL_MIN_LAG_NS) {
				for (size_t k = i; k + 1 < j; k++)
					ranks[c[k].rank_idx].waited_ns += (uint64_t)(c[j - 1].entry - c[k].entry);
				all[g++] = (struct cw_nccl_late){
					.entry = c[j - 1].entry, .entry_mono = c[j - 1].entry_mono,
					.lag_ns = c[j - 1].entry - c[j - 2].entry, .seq = c[j - 1].seq,
					.comm_id = c[j - 1].comm_id,
				};
			}
		}
		qsort(all, g, sizeof(*all), cmp_late);
		out->nlate = g < CW_NCCL_MAX_LATE ? g : CW_NCCL_MAX_LATE;
		memcpy(out->late, all, out->nlate * sizeof(*all));
		free(all);
	}
	/* Waiting share per rank: time from entry to completion over its
	 * span of collectives. */
	{
		size_t ns = 0;

		for (int r = 0; r < nranks; r++) {
			if (ranks[r].last_entry <= ranks[r].first_entry)
				continue;
			ranks[r].step_ns = (uint64_t)(ranks[r].last_entry - ranks[r].first_entry);
			shares[ns++] = (double)ranks[r].wait_ns / (double)ranks[r].step_ns;
		}
		if (ns) {
			qsort(shares, ns, sizeof(*shares), cmp_dbl);
			out->comm_share = shares[ns / 2];
		}
		if (nbw) {
			qsort(bw, nbw, sizeof(*bw), cmp_dbl);
			out->busbw_gbps = bw[nbw / 2]; /* bytes per ns = GB/s */
		}
		if (ng) {
			size_t nt = 0;

			for (i = 0; i < ng; i++)
				if (transfers[i] > 0)
					transfers[nt++] = transfers[i];
			if (nt) {
				qsort(transfers, nt, sizeof(*transfers), cmp_i64);
				out->transfer_p50_ns = transfers[nt / 2];
			}
			for (i = 0, nt = 0; i < n; i++)
				if (c[i].bytes > 0)
					lags[nt++] = c[i].bytes;
			if (nt) {
				qsort(lags, nt, sizeof(*lags), cmp_i64);
				out->bytes_p50 = lags[nt / 2];
			}
		}
	}
out:
	free(starts);
	free(lags);
	free(transfers);
	free(gstart_rank);
	free(bw);
	free(shares);
	free(seen);
	free(opcount);
	return ret;
}
