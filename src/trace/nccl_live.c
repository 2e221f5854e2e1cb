#include "trace/nccl_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/timeutil.h"

static int is_collective(const char *op)
{
	static const char *const ops[] = { "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
					   "ncclBcast", "ncclReduce", "ncclAlltoAll", NULL };

	for (int i = 0; ops[i]; i++)
		if (!strcmp(op, ops[i]))
			return 1;
	return 0;
}

static struct cw_nccl_live_rank *rank_of(struct cw_nccl_live *l, uint32_t pid)
{
	for (int i = 0; i < l->n; i++)
		if (l->r[i].pid == pid)
			return &l->r[i];
	if (l->n == CW_NCCL_LIVE_MAX)
		return NULL;
	memset(&l->r[l->n], 0, sizeof(l->r[0]));
	l->r[l->n].pid = pid;
	l->r[l->n].rank = -1;
	return &l->r[l->n++];
}

void cw_nccl_live_observe(struct cw_nccl_live *l, const struct cw_event_row *row)
{
	struct cw_nccl_live_rank *r;

	if (!row->source || strcmp(row->source, "nccl") || !row->op)
		return;
	if (!strcmp(row->op, "ncclCommInitRank") || !strcmp(row->op, "ncclCommInitRankConfig")) {
		if (row->has_ret && row->ret == 0 && (r = rank_of(l, row->pid)) && r->rank < 0)
			r->rank = (int)row->args[2];
		return;
	}
	/* A failed call entered nothing. */
	if (!is_collective(row->op) || (row->has_ret && row->ret != 0) || !(r = rank_of(l, row->pid)))
		return;
	if (r->count && row->wall_ns > r->last_wall) {
		uint64_t g = row->wall_ns - r->last_wall;
		/* A running mean of the step, 1/8 weight: enough for 20 x. */
		r->gap_ns = r->gap_ns ? r->gap_ns - r->gap_ns / 8 + g / 8 : g;
	}
	r->count++;
	r->last_wall = row->wall_ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int cw_nccl_live_hang(const struct cw_nccl_live *l, uint64_t now_wall, uint64_t floor_ns, char *buf, size_t len)
{
	uint64_t top = 0, since = UINT64_MAX, gaps[CW_NCCL_LIVE_MAX], thr;
	int ng = 0, behind = 0, ahead = 0;
	size_t off;
	char waited[32];

	for (int i = 0; i < l->n; i++)
		if (l->r[i].count > top)
			top = l->r[i].count;
	if (l->n < 2 || !top)
		return 0;
	for (int i = 0; i < l->n; i++) {
		if (l->r[i].count == top) {
			ahead++;
			if (l->r[i].last_wall < since)
				since = l->r[i].last_wall;
			if (l->r[i].gap_ns)
				gaps[ng++] = l->r[i].gap_ns;
		} else {
			behind++;
		}
	}
	if (!behind || since > now_wall)
		return 0;
	thr = floor_ns ? floor_ns : 10 * NSEC_PER_SEC;
	if (ng) {
		qsort(gaps, (size_t)ng, sizeof(gaps[0]), cmp_u64);
		if (20 * gaps[ng / 2] > thr)
			thr = 20 * gaps[ng / 2];
	}
	if (now_wall - since < thr)
		return 0;
	cw_format_duration(now_wall - since, waited, sizeof(waited));
	off = (size_t)snprintf(buf, len, "NCCL hang: collective #%llu entered by %d of %d processes %s ago; behind:",
			       (unsigned long long)top, ahead, ahead + behind, waited);
	for (int i = 0, k = 0; i < l->n && off < len; i++) {
		const struct cw_nccl_live_rank *r = &l->r[i];

		if (r->count == top)
			continue;
		if (k++ == 4) {
			snprintf(buf + off, len - off, " ...");
			break;
		}
		if (r->rank >= 0)
			off += (size_t)snprintf(buf + off, len - off, " rank %d (pid %u, at #%llu)", r->rank, r->pid,
						(unsigned long long)r->count);
		else
			off += (size_t)snprintf(buf + off, len - off, " pid %u (at #%llu)", r->pid,
						(unsigned long long)r->count);
	}
	return 1;
}
