/* Loading the collectives of a window for the NCCL rules (nccl_load.h). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "analysis/rules/nccl_load.h"
#include "pipeline/ops.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/vec.h"

#define MAX_CALLS 4000000

int64_t cw_merge_offset_of(json_t *nodes, const char *node)
{
	json_t *off = json_object_get(json_object_get(nodes, node), "offset_ns");
	return json_is_integer(off) ? json_integer_value(off) : 0;
}

static int has_table(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st = NULL;
	int found = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

static int rank_index(struct cw_nccl_loaded *l, const char *node, int64_t pid, int64_t tid, int rank, int nr, int *last)
{
	if (*last >= 0 && l->ranks[*last].pid == pid && !strcmp(l->ranks[*last].node, node))
		return *last;
	for (int i = 0; i < l->nranks; i++)
		if (l->ranks[i].pid == pid && !strcmp(l->ranks[i].node, node))
			return *last = i;
	if (l->nranks == CW_NCCL_MAX_RANKS)
		return -1;
	struct cw_nccl_rank *nv = realloc(l->ranks, (size_t)(l->nranks + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	l->ranks = nv;
	memset(&nv[l->nranks], 0, sizeof(*nv));
	snprintf(nv[l->nranks].node, sizeof(nv[0].node), "%s", node);

	nv[l->nranks].pid = pid;
	nv[l->nranks].tid = tid;
	nv[l->nranks].rank = rank;
	nv[l->nranks].nranks = nr;
	return *last = l->nranks++;
}

/* The id a communicator shared by two jobs takes on one node: its own id
 * mixed with the node's name (FNV-1a), never 0. */
static int64_t node_comm(int64_t comm, const char *node)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)node; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return (int64_t)(((uint64_t)comm ^ h) | 1);
}

struct comm_rank {
	int64_t comm;
	int rank, ri;
};

/* A communicator on which processes of different nodes claim the same
 * rank is not one job: a merged file holds two whose unique ids hashed
 * alike. Its calls (and its members by ncclCommInitRank) are split by
 * node, each node's part a communicator of its own, and l->note says so.
 * A rank number taken again on one node (a restarted process) is left as
 * it is. */
static int split_shared_comms(struct cw_nccl_loaded *l)
{
	struct comm_rank *v = NULL, last[CW_NCCL_MAX_RANKS];
	int64_t dup[16];
	size_t nv = 0, cap = 0, ndup = 0, i, k;

	for (i = 0; i < (size_t)l->nranks && i < CW_NCCL_MAX_RANKS; i++)
		last[i].comm = 0, last[i].rank = -2;
	for (i = 0; i < l->n; i++) {
		const struct cw_nccl_call *c = &l->calls[i];
		struct comm_rank *lp = &last[c->rank_idx];

		if (c->rank < 0 || (lp->comm == c->comm_id && lp->rank == c->rank))
			continue;
		lp->comm = c->comm_id;
		lp->rank = c->rank;
		for (k = 0; k < nv; k++)
			if (v[k].comm == c->comm_id && v[k].rank == c->rank && v[k].ri == c->rank_idx)
				break;
		if (k < nv)
			continue;
		for (k = 0; k < nv; k++) {
			const struct cw_nccl_rank *a = &l->ranks[v[k].ri], *b = &l->ranks[c->rank_idx];
			size_t d;

			if (v[k].comm != c->comm_id || v[k].rank != c->rank)
				continue;
			for (d = 0; d < ndup && dup[d] != c->comm_id; d++)
				;
			if (d == ndup && ndup < sizeof(dup) / sizeof(dup[0]) && strcmp(a->node, b->node))
				dup[ndup++] = c->comm_id;
			if (!l->note[0] && strcmp(a->node, b->node))
				snprintf(l->note, sizeof(l->note),
					 "NCCL communicator %016llx has two rank %d (pid %lld on %s, pid %lld on %s): two"
					 " jobs with the same communicator id, read apart by node",
					 (unsigned long long)c->comm_id, c->rank, (long long)a->pid, a->node,
					 (long long)b->pid, b->node);
			break;
		}
		if (cw_vec_reserve(&v, &cap, nv + 1, sizeof(*v), 64) < 0) {
			free(v);
			return -ENOMEM;
		}
		v[nv].comm = c->comm_id;
		v[nv].rank = c->rank;
		v[nv++].ri = c->rank_idx;
	}
	free(v);
	for (size_t d = 0; d < ndup; d++) {
		for (i = 0; i < l->n; i++)
			if (l->calls[i].comm_id == dup[d])
				l->calls[i].comm_id = node_comm(dup[d], l->ranks[l->calls[i].rank_idx].node);
		for (int r = 0; r < l->nranks; r++)
			if (l->ranks[r].init_comm == dup[d])
				l->ranks[r].init_comm = node_comm(dup[d], l->ranks[r].node);
	}
	l->split = (int)ndup;
	return 0;
}

/* Collectives of the window (failed calls entered nothing; p2p calls are
 * not collectives), entries moved onto one clock with merge's offsets. */
int cw_nccl_load(sqlite3 *db, const char *node_filter, uint64_t from, uint64_t to, struct cw_nccl_loaded *l)
{
	/* Through the time index for a part of the store; a window that
	 * covers it all is read in one table scan (the index would add a
	 * row lookup per call: about a third of the time on 1,000,000). */
	static const char *const sqls[2] = {
		"SELECT node, pid, tid, coalesce(comm_id, comm), seq, op, bytes, wall_ns, mono_ns, done_wall_ns,"
		" rank, nranks FROM nccl_calls WHERE wall_ns BETWEEN ?1 AND ?2 AND (ret IS NULL OR ret = 0)"
		" AND op NOT IN ('ncclSend', 'ncclRecv') AND (?3 IS NULL OR node = ?3)",
		"SELECT node, pid, tid, coalesce(comm_id, comm), seq, op, bytes, wall_ns, mono_ns, done_wall_ns,"
		" rank, nranks FROM nccl_calls WHERE +wall_ns BETWEEN ?1 AND ?2 AND (ret IS NULL OR ret = 0)"
		" AND op NOT IN ('ncclSend', 'ncclRecv') AND (?3 IS NULL OR node = ?3)",
	};
	const char *sql = sqls[0];
	int64_t lo = 0, hi = -1;
	char *skew = cw_meta_get(db, "merge.skew"), cur_node[64] = "", cur_op[48] = "";
	int32_t op_id = 0;
	json_t *sk = skew ? json_loads(skew, 0, NULL) : NULL, *nodes = json_object_get(sk, "nodes");
	sqlite3_stmt *st = NULL;
	int rc, ret = 0, last = -1;
	int64_t off = 0;

	free(skew);
	memset(l, 0, sizeof(*l));
	l->observed_until = INT64_MIN;
	if (!has_table(db, "nccl_calls"))
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT min(wall_ns), max(wall_ns) FROM nccl_calls", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		lo = sqlite3_column_int64(st, 0);
		hi = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (hi >= lo && (int64_t)from <= lo && (int64_t)to >= hi)
		sql = sqls[1];
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	sqlite3_bind_int64(st, 1, (int64_t)from);
	sqlite3_bind_int64(st, 2, (int64_t)to);
	if (node_filter)
		sqlite3_bind_text(st, 3, node_filter, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && l->n < MAX_CALLS) {
		const char *node = (const char *)sqlite3_column_text(st, 0), *op = (const char *)sqlite3_column_text(st, 5);
		struct cw_nccl_call *c;
		int ri;

		if (!node)
			continue;
		if (strcmp(node, cur_node)) {
			snprintf(cur_node, sizeof(cur_node), "%s", node);
			off = cw_merge_offset_of(nodes, node);
		}
		ri = rank_index(l, node, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
				sqlite3_column_type(st, 10) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 10),
				sqlite3_column_type(st, 11) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 11), &last);
		if (ri == -ENOMEM) {
			ret = ri;
			goto out;
		}
		if (ri < 0)
			continue;
		if (cw_vec_reserve(&l->calls, &l->cap, l->n + 1, sizeof(*l->calls), 4096) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		c = &l->calls[l->n++];
		c->comm_id = sqlite3_column_int64(st, 3);
		c->seq = sqlite3_column_int64(st, 4);
		/* Consecutive rows mostly repeat the op: look a name up once. */
		if (strcmp(op ? op : "", cur_op)) {
			snprintf(cur_op, sizeof(cur_op), "%s", op ? op : "");
			op_id = (int32_t)cw_op_lookup(cur_op);
		}
		c->op = op_id;
		c->bytes = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 6);
		c->entry = sqlite3_column_int64(st, 7) - off;
		c->entry_mono = sqlite3_column_int64(st, 8);
		c->done = sqlite3_column_type(st, 9) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(st, 9) - off;
		c->rank_idx = ri;
		c->rank = sqlite3_column_type(st, 10) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 10);
		if (c->entry > l->observed_until)
			l->observed_until = c->entry;
		if (c->done != INT64_MIN && c->done > l->observed_until)
			l->observed_until = c->done;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = cw_sqlite_errno(rc);
	sqlite3_finalize(st);
	st = NULL;
	/* A communicator with fewer ranks seen than it declares: its ranks
	 * that never entered a collective are found by their
	 * ncclCommInitRank (arg0 nranks, arg1 the unique id's hash, which is
	 * the comm_id, arg2 the rank). */
	if (!ret && l->n) {
		int declared = 0;

		for (int i = 0; i < l->nranks; i++)
			if (l->ranks[i].nranks > declared)
				declared = l->ranks[i].nranks;
		if (declared > l->nranks &&
		    sqlite3_prepare_v2(db, "SELECT node, pid, tid, arg0, arg1, arg2 FROM events WHERE source = 'nccl'"
					   " AND op = 'ncclCommInitRank' AND (ret IS NULL OR ret = 0) AND wall_ns BETWEEN ?1 AND ?2"
					   " AND (?3 IS NULL OR node = ?3) LIMIT 4096", -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, (int64_t)from);
			sqlite3_bind_int64(st, 2, (int64_t)to);
			if (node_filter)
				sqlite3_bind_text(st, 3, node_filter, -1, SQLITE_STATIC);
			while (sqlite3_step(st) == SQLITE_ROW) {
				const char *node = (const char *)sqlite3_column_text(st, 0);
				int64_t nr = sqlite3_column_int64(st, 3), rk = sqlite3_column_int64(st, 5);
				int ri;

				if (!node || nr < 1 || nr > CW_NCCL_MAX_RANKS || rk < 0 || rk >= nr)
					continue;
				ri = rank_index(l, node, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), (int)rk,
						(int)nr, &last);
				if (ri == -ENOMEM) {
					ret = ri;
					break;
				}
				if (ri >= 0)
					l->ranks[ri].init_comm = sqlite3_column_int64(st, 4);
			}
			sqlite3_finalize(st);
			st = NULL;
		}
	}
	if (!ret && l->n)
		ret = split_shared_comms(l);
	/* Each rank's thread name, for the chains. */
	if (!ret && l->nranks &&
	    sqlite3_prepare_v2(db, "SELECT comm FROM threads WHERE node = ?1 AND tid = ?2", -1, &st, NULL) == SQLITE_OK)
		for (int i = 0; i < l->nranks; i++) {
			sqlite3_bind_text(st, 1, l->ranks[i].node, -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 2, l->ranks[i].tid);
			if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
				snprintf(l->ranks[i].comm, sizeof(l->ranks[i].comm), "%s", sqlite3_column_text(st, 0));
			sqlite3_reset(st);
		}
out:
	sqlite3_finalize(st);
	json_decref(sk);
	return ret;
}

void cw_nccl_loaded_free(struct cw_nccl_loaded *l)
{
	free(l->calls);
	free(l->ranks);
}

/* The newest time any node's store saw (offset removed): the hang clock. */
/* Each rank's node_end (nccl_load.h): its node's sessions' end where every
 * one of them ended before until, else until. */
static void node_ends(sqlite3 *db, json_t *nodes, struct cw_nccl_loaded *l, int64_t until)
{
	sqlite3_stmt *st = NULL;

	for (int i = 0; i < l->nranks; i++)
		l->ranks[i].node_end = until;
	if (!has_table(db, "sessions") ||
	    sqlite3_prepare_v2(db, "SELECT node, max(ended_wall_ns) FROM sessions WHERE kind != 'merge' GROUP BY node"
				   " HAVING count(*) = count(ended_wall_ns)", -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 0);
		int64_t t;

		if (!node || sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;
		t = sqlite3_column_int64(st, 1) - cw_merge_offset_of(nodes, node);
		for (int i = 0; i < l->nranks; i++)
			if (t > 0 && t < until && !strcmp(l->ranks[i].node, node))
				l->ranks[i].node_end = t;
	}
	sqlite3_finalize(st);
}

int cw_nccl_observed_until(sqlite3 *db, struct cw_nccl_loaded *l, int64_t *out)
{
	static const char sql[] = "SELECT node, max(wall_ns + duration_ns) FROM events WHERE id >= ?1 GROUP BY node"
				  " UNION ALL SELECT node, max(wall_ns) FROM snapshots GROUP BY node";
	char *skew = cw_meta_get(db, "merge.skew");
	json_t *sk = skew ? json_loads(skew, 0, NULL) : NULL, *nodes = json_object_get(sk, "nodes");
	sqlite3_stmt *st = NULL;
	int64_t lo = 0;
	int rc;

	free(skew);
	*out = l->observed_until;
	/* The last rows only: a scan from the tail of the id range. */
	if (cw_events_id_at(db, (uint64_t)(l->observed_until > 0 ? l->observed_until : 0), &lo) < 0)
		lo = 0;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		json_decref(sk);
		return cw_sqlite_errno(rc);
	}
	sqlite3_bind_int64(st, 1, lo);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 0);
		int64_t t;

		if (!node || sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;
		t = sqlite3_column_int64(st, 1) - cw_merge_offset_of(nodes, node);
		if (t > *out)
			*out = t;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		node_ends(db, nodes, l, *out);
	json_decref(sk);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}
