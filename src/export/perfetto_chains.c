/* Causal chains in the trace: the explain engine runs over the exported
 * window; for each chain the op's slow calls (>= 3x p50, the engine's
 * threshold) that made it into the trace get an instant marker, and when
 * the chain's cause is per call (off-CPU preempted or blocked, block I/O)
 * the longest such interval overlapping the call gets a flow arrow to it.
 * A straggler chain marks the straggler's collectives and draws an arrow
 * from each late entry to the peers' calls of the same collective (on
 * other nodes too) that were waiting for it. Both ends of a flow are
 * slices already written; a cause or effect cut by the window gives no
 * arrow. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "export/perfetto_int.h"
#include "store/store.h"
#include "store/read_error.h"

#define CALLS_PER_CHAIN 50
#define SLOW_FACTOR 3
/* A peer that entered less than this before the straggler was not
 * waiting for it. */
#define CW_STRAG_FLOW_MIN_NS 100000

enum cause_kind { CAUSE_NONE, CAUSE_PREEMPTED, CAUSE_BLOCKED };

static enum cause_kind cause_of(const char *kind)
{
	if (!strcmp(kind, "cpu_preemption") || !strcmp(kind, "gpu_time_slicing"))
		return CAUSE_PREEMPTED;
	if (!strcmp(kind, "io_contention") || !strcmp(kind, "memory_pressure") ||
	    !strcmp(kind, "dataloader_starvation"))
		return CAUSE_BLOCKED;
	return CAUSE_NONE;
}

/* Block I/O of one node in the window that made it into the trace, read
 * once per node rather than scanned per slow call. */
struct io_slice {
	uint64_t key;
	int64_t start, end;
};

struct stmts {
	sqlite3_stmt *calls, *off, *io;
	struct io_slice *iov;
	size_t nio;
	int io_node; /* node index iov holds, -1 none */
};

static int load_io(struct pf_ctx *c, struct stmts *s, const struct pf_node *n)
{
	int rc, ni = (int)(n - c->nodes);
	size_t cap = 0;

	if (s->io_node == ni)
		return 0;
	s->nio = 0;
	s->io_node = ni;
	sqlite3_reset(s->io);
	sqlite3_bind_text(s->io, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s->io, 2, n->from);
	sqlite3_bind_int64(s->io, 3, n->to);
	while ((rc = sqlite3_step(s->io)) == SQLITE_ROW) {
		uint64_t k = (uint64_t)sqlite3_column_int64(s->io, 0);
		int64_t v;
		int g = pf_emitted_get(&c->emitted, k, &v);
		if (g < 0)
			return g;
		if (!g)
			continue;
		if (s->nio == cap) {
			struct io_slice *nv = realloc(s->iov, (cap = cap ? cap * 2 : 64) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			s->iov = nv;
		}
		s->iov[s->nio++] = (struct io_slice){ k, sqlite3_column_int64(s->io, 1), sqlite3_column_int64(s->io, 2) };
	}
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* The cause slice of one slow call: key in c->emitted, 0 when none. */
static int find_cause(struct pf_ctx *c, struct stmts *s, const struct pf_node *n, enum cause_kind ck, int64_t tid,
		      int64_t start, int64_t end, uint64_t *key, int64_t *cstart, int64_t *cend)
{
	int rc;

	*key = 0;
	if (ck == CAUSE_NONE)
		return 0;
	sqlite3_reset(s->off);
	sqlite3_bind_text(s->off, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s->off, 2, tid);
	sqlite3_bind_text(s->off, 3, ck == CAUSE_PREEMPTED ? "preempted" : "blocked", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s->off, 4, start);
	sqlite3_bind_int64(s->off, 5, end);
	while ((rc = sqlite3_step(s->off)) == SQLITE_ROW) {
		uint64_t k = (uint64_t)sqlite3_column_int64(s->off, 0) | CW_KEY_OFFCPU;
		int64_t v;
		int g = pf_emitted_get(&c->emitted, k, &v);
		if (g < 0)
			return g;
		if (g) {
			*key = k;
			*cstart = sqlite3_column_int64(s->off, 1);
			*cend = sqlite3_column_int64(s->off, 2);
			return 0;
		}
	}
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	if (ck != CAUSE_BLOCKED)
		return 0;
	/* Blocked without an interval of its own in the trace: the longest
	 * block I/O in flight on the node during the call. */
	if ((rc = load_io(c, s, n)))
		return rc;
	for (size_t i = 0; i < s->nio; i++) {
		const struct io_slice *io = &s->iov[i];
		if (io->start < end && io->end > start &&
		    (!*key || io->end - io->start > *cend - *cstart)) {
			*key = io->key;
			*cstart = io->start;
			*cend = io->end;
		}
	}
	return 0;
}

struct coll {
	int64_t entry, end; /* reference clock */
	int64_t otid, pid;
	int node;
};

static int coll_cmp(const void *a, const void *b)
{
	const struct coll *x = a, *y = b;
	if (x->node != y->node)
		return x->node - y->node;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* An instant marker of chain ch on thread tid of node n at wall time
 * wall (with the NCCL call's seq when has_seq). */
static int chain_marker(struct pf_ctx *c, const char *name, const struct pf_node *n, int64_t tid, int64_t wall,
			const struct cw_chain *ch, int has_seq, int64_t seq)
{
	json_t *args = json_pack("{s:s,s:o,s:o}", "severity", cw_severity_name(ch->severity), "op",
				 cw_trace_str(ch->op), "node", cw_trace_str(ch->node));

	if (args && has_seq)
		json_object_set_new(args, "seq", json_integer(seq));
	if (args)
		json_object_set_new(args, "summary", cw_trace_str(ch->summary));
	c->st->markers++;
	return cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:s,s:s,s:i,s:I,s:o,s:o}", "ph", "i", "s", "t", "name", name,
					       "cat", "causeway.chain", "pid", n->pid, "tid", (json_int_t)tid, "ts",
					       pf_ts(c, n, wall), "args", args));
}

static int flow(struct pf_ctx *c, const char *kind, const struct pf_node *sn, int64_t stid, int64_t sts,
		const struct pf_node *fn, int64_t ftid, int64_t fts, uint64_t *flow_id)
{
	int ret;

	(*flow_id)++;
	ret = cw_tracew_event(&c->w, json_pack("{s:s,s:I,s:s,s:s,s:i,s:I,s:o}", "ph", "s", "id", (json_int_t)*flow_id,
					       "name", kind, "cat", "causeway.chain", "pid", sn->pid, "tid",
					       (json_int_t)stid, "ts", pf_ts(c, sn, sts)));
	if (!ret)
		ret = cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:I,s:s,s:s,s:i,s:I,s:o}", "ph", "f", "bp", "e", "id",
						       (json_int_t)*flow_id, "name", kind, "cat", "causeway.chain",
						       "pid", fn->pid, "tid", (json_int_t)ftid, "ts", pf_ts(c, fn, fts)));
	c->st->flows++;
	return ret;
}

/* Arrows from the straggler's late entries to the peers waiting in the
 * same collective, matched by completion time (reference clock). */
static int emit_straggler(struct pf_ctx *c, const struct cw_chain *ch, uint64_t *flow_id)
{
	static const char sql[] = "SELECT id, node, pid, wall_ns, duration_ns FROM events WHERE op = ?1"
				  " AND source = 'nccl' AND wall_ns BETWEEN ?2 AND ?3 LIMIT 200000";
	struct coll *v = NULL;
	size_t n = 0, cap = 0, s0 = 0, s1 = 0, marked = 0;
	sqlite3_stmt *st = NULL;
	int64_t lo = INT64_MAX, hi = 0, tol, *gaps = NULL;
	int rc, ret = 0, sni = -1;

	for (int i = 0; i < c->nnodes; i++) {
		lo = c->nodes[i].from < lo ? c->nodes[i].from : lo;
		hi = c->nodes[i].to > hi ? c->nodes[i].to : hi;
		if (!strcmp(c->nodes[i].name, ch->node))
			sni = i;
	}
	if (sni < 0 || !ch->pid)
		return 0;
	if ((rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL)) != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, ch->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 1);
		int64_t otid, id = sqlite3_column_int64(st, 0);
		int ni = -1;
		for (int i = 0; node && i < c->nnodes; i++)
			if (!strcmp(c->nodes[i].name, node))
				ni = i;
		int g = ni < 0 ? 0 : pf_emitted_get(&c->emitted, (uint64_t)id, &otid);
		if (g < 0) {
			ret = g;
			goto out;
		}
		if (!g)
			continue;
		if (n == cap) {
			struct coll *nv = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*nv));
			if (!nv) {
				ret = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		v[n].entry = sqlite3_column_int64(st, 3) - c->nodes[ni].offset_ns;
		v[n].end = v[n].entry + sqlite3_column_int64(st, 4);
		v[n].otid = otid & 0xffffffffLL;
		v[n].pid = sqlite3_column_int64(st, 2);
		v[n].node = ni;
		n++;
	}
	if (rc != SQLITE_DONE) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	if (n < 2)
		goto out;
	qsort(v, n, sizeof(*v), coll_cmp);
	while (s0 < n && !(v[s0].node == sni && v[s0].pid == ch->pid))
		s0++;
	for (s1 = s0; s1 < n && v[s1].node == sni && v[s1].pid == ch->pid; s1++)
		;
	if (s1 - s0 < 2)
		goto out;
	/* Completions closer than half the straggler's usual gap between
	 * collectives belong to the same collective. */
	if (!(gaps = malloc((s1 - s0) * sizeof(*gaps)))) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t k = s0 + 1; k < s1; k++)
		gaps[k - s0 - 1] = v[k].end - v[k - 1].end;
	qsort(gaps, s1 - s0 - 1, sizeof(*gaps), i64_cmp);
	tol = gaps[(s1 - s0 - 1) / 2] / 2;
	for (size_t k = s0; k < s1 && !ret && marked < CALLS_PER_CHAIN; k++) {
		const struct coll *sc = &v[k];
		int drew = 0;
		for (size_t j = 0; j < n && !ret; j++) {
			const struct coll *p = &v[j];
			if (j >= s0 && j < s1)
				continue;
			/* The peer entered first and was still inside when the
			 * straggler arrived. */
			if (llabs(p->end - sc->end) > tol || p->entry + CW_STRAG_FLOW_MIN_NS > sc->entry ||
			    p->end <= sc->entry)
				continue;
			/* Lands inside the waiting call, after the late entry. */
			ret = flow(c, "straggler", &c->nodes[sni], sc->otid, sc->entry + c->nodes[sni].offset_ns,
				   &c->nodes[p->node], p->otid,
				   sc->entry + (p->end - sc->entry) / 2 + c->nodes[p->node].offset_ns, flow_id);
			drew = 1;
		}
		if (!drew || ret)
			continue;
		ret = chain_marker(c, "straggler", &c->nodes[sni], sc->otid, sc->entry + c->nodes[sni].offset_ns, ch, 0,
				   0);
		marked++;
	}
out:
	sqlite3_finalize(st);
	free(v);
	free(gaps);
	return ret;
}

static int node_index(const struct pf_ctx *c, const char *name)
{
	for (int i = 0; name && i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].name, name))
			return i;
	return -1;
}

/* nccl_straggler: for the straggler's collectives it entered last (at
 * most CALLS_PER_CHAIN), an arrow from its entry to every other rank's
 * track inside the wait for the same collective (the same communicator
 * and sequence number in nccl_calls, through its (comm_id, seq) index),
 * and a marker on the entry. The arrow lands halfway between the late
 * entry and the collective's completion on that rank, inside the
 * synchronization that waited for it. */
static int emit_nccl(struct pf_ctx *c, const struct cw_chain *ch, uint64_t *flow_id)
{
	static const char own_sql[] =
		"SELECT coalesce(comm_id, comm), seq, tid, wall_ns FROM nccl_calls WHERE node = ?1 AND pid = ?2"
		" AND wall_ns BETWEEN ?3 AND ?4 AND (ret IS NULL OR ret = 0) AND op NOT IN ('ncclSend', 'ncclRecv')"
		" ORDER BY wall_ns";
	static const char peers_sql[] =
		"SELECT node, pid, tid, wall_ns, done_wall_ns FROM nccl_calls WHERE coalesce(comm_id, comm) = ?1"
		" AND seq = ?2 AND (ret IS NULL OR ret = 0) AND op NOT IN ('ncclSend', 'ncclRecv')";
	sqlite3_stmt *own = NULL, *peers = NULL;
	int sni = node_index(c, ch->node), marked = 0, rc, ret = 0;
	const struct pf_node *sn;

	if (sni < 0 || !ch->pid)
		return 0;
	sn = &c->nodes[sni];
	if (sqlite3_prepare_v2(c->db, own_sql, -1, &own, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, peers_sql, -1, &peers, NULL) != SQLITE_OK) {
		ret = 0; /* a store without nccl_calls: no arrows */
		goto out;
	}
	sqlite3_bind_text(own, 1, sn->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(own, 2, ch->pid);
	sqlite3_bind_int64(own, 3, sn->from);
	sqlite3_bind_int64(own, 4, sn->to);
	while (!ret && marked < CALLS_PER_CHAIN && (rc = sqlite3_step(own)) == SQLITE_ROW) {
		int64_t comm = sqlite3_column_int64(own, 0), seq = sqlite3_column_int64(own, 1);
		int64_t stid = sqlite3_column_int64(own, 2), sent = sqlite3_column_int64(own, 3);
		int64_t sref = sent - sn->offset_ns, next = INT64_MIN;
		struct { int ni; int64_t tid, entry, done; } w[64];
		int nw = 0, last = 1;

		sqlite3_reset(peers);
		sqlite3_bind_int64(peers, 1, comm);
		sqlite3_bind_int64(peers, 2, seq);
		while ((rc = sqlite3_step(peers)) == SQLITE_ROW) {
			int ni = node_index(c, (const char *)sqlite3_column_text(peers, 0));
			int64_t e;

			if (ni < 0 || (ni == sni && sqlite3_column_int64(peers, 1) == ch->pid))
				continue;
			e = sqlite3_column_int64(peers, 3) - c->nodes[ni].offset_ns;
			if (e > next)
				next = e;
			if (e + CW_STRAG_FLOW_MIN_NS > sref)
				last = 0;
			if (nw < 64 && sqlite3_column_type(peers, 4) != SQLITE_NULL)
				w[nw++] = (typeof(w[0])){ ni, sqlite3_column_int64(peers, 2), e,
							  sqlite3_column_int64(peers, 4) - c->nodes[ni].offset_ns };
		}
		/* Only the collectives it entered last, after every other rank. */
		if (!last || next == INT64_MIN || !nw)
			continue;
		for (int k = 0; k < nw && !ret; k++) {
			const struct pf_node *pn = &c->nodes[w[k].ni];
			int64_t at = sref + (w[k].done > sref ? (w[k].done - sref) / 2 : 0);

			if (at + pn->offset_ns < pn->from || at + pn->offset_ns > pn->to)
				continue;
			ret = flow(c, "nccl_straggler", sn, stid, sent, pn, w[k].tid, at + pn->offset_ns, flow_id);
		}
		if (ret)
			break;
		ret = chain_marker(c, "nccl_straggler", sn, stid, sent, ch, 1, (int64_t)seq);
		marked++;
	}
out:
	sqlite3_finalize(own);
	sqlite3_finalize(peers);
	return ret;
}

static int emit_chain(struct pf_ctx *c, struct stmts *s, const struct cw_chain *ch, uint64_t *flow_id)
{
	const char *kind = cw_kind_name(ch->kind);
	enum cause_kind ck = cause_of(kind);
	const struct pf_node *n = NULL;
	int rc, ret = 0, marked = 0;

	if (ch->kind == CW_KIND_STRAGGLER)
		return emit_straggler(c, ch, flow_id);
	if (ch->kind == CW_KIND_NCCL_STRAGGLER)
		return emit_nccl(c, ch, flow_id);

	for (int i = 0; i < c->nnodes; i++)
		if (!strcmp(c->nodes[i].name, ch->node))
			n = &c->nodes[i];
	if (!n)
		return 0;
	sqlite3_reset(s->calls);
	sqlite3_bind_text(s->calls, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s->calls, 2, ch->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s->calls, 3, n->from);
	sqlite3_bind_int64(s->calls, 4, n->to);
	sqlite3_bind_int64(s->calls, 5, (int64_t)(ch->p50_ns ? SLOW_FACTOR * ch->p50_ns : 1));
	sqlite3_bind_int64(s->calls, 6, ch->pid);
	sqlite3_bind_int(s->calls, 7, CALLS_PER_CHAIN);
	while (!ret && (rc = sqlite3_step(s->calls)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s->calls, 0), tid = sqlite3_column_int64(s->calls, 1);
		int64_t start = sqlite3_column_int64(s->calls, 2), end = start + sqlite3_column_int64(s->calls, 3);
		int64_t v, cstart = 0, cend = 0, fts;
		uint64_t ckey;

		int g = pf_emitted_get(&c->emitted, (uint64_t)id, &v);
		if (g < 0) {
			ret = g;
			break;
		}
		if (!g)
			continue;
		if ((ret = find_cause(c, s, n, ck, tid, start, end, &ckey, &cstart, &cend)))
			break;
		/* Without a per-call cause only the slowest call is marked. */
		if (!ckey && marked)
			continue;
		int64_t etid = v & 0xffffffffLL, ctid;
		ret = chain_marker(c, kind, n, etid, start, ch, 0, 0);
		marked = 1;
		if (ret || !ckey)
			continue;
		if ((g = pf_emitted_get(&c->emitted, ckey, &v)) < 0) {
			ret = g;
			break;
		}
		ctid = v & 0xffffffffLL;
		/* The importer orders events by time, so the arrow's end must not
		 * precede its start; it lands inside the call after the cause is
		 * over (bp "e": bound to the slice enclosing that instant). */
		fts = cend < end ? cend + (end - cend) / 2 : end - 1;
		if (fts < cstart)
			fts = cstart;
		ret = flow(c, kind, n, ctid, cstart, n, etid, fts, flow_id);
	}
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = cw_sqlite_errno(rc);
	return ret;
}

int pf_emit_chains(struct pf_ctx *c)
{
	static const char calls_sql[] =
		"SELECT id, tid, wall_ns, duration_ns FROM events WHERE node = ?1 AND op = ?2"
		" AND wall_ns BETWEEN ?3 AND ?4 AND duration_ns >= ?5 AND (?6 = 0 OR pid = ?6)"
		" ORDER BY duration_ns DESC, id LIMIT ?7";
	static const char off_sql[] =
		"SELECT id, wall_ns, wall_ns + duration_ns FROM offcpu WHERE node = ?1 AND tid = ?2 AND reason = ?3"
		" AND wall_ns < ?5 AND wall_ns + duration_ns > ?4 ORDER BY duration_ns DESC, id";
	static const char io_sql[] =
		"SELECT id, wall_ns, wall_ns + duration_ns FROM kevents WHERE node = ?1 AND source = 'io'"
		" AND wall_ns BETWEEN ?2 AND ?3 ORDER BY id";
	struct cw_explain_opts eo = { 0 };
	struct cw_explain_result r;
	struct stmts s = { .io_node = -1 };
	uint64_t flow_id = 0;
	int64_t lo = INT64_MAX, hi = 0;
	int ret;

	if (!c->nnodes)
		return 0;
	for (int i = 0; i < c->nnodes; i++) {
		if (c->nodes[i].from < lo)
			lo = c->nodes[i].from;
		if (c->nodes[i].to > hi)
			hi = c->nodes[i].to;
	}
	eo.from_wall_ns = lo > 0 ? (uint64_t)lo : 1;
	eo.to_wall_ns = hi > lo ? (uint64_t)hi : eo.from_wall_ns + 1;
	eo.pids = c->o->pids;
	eo.npids = c->o->npids;
	if ((ret = cw_explain_run(c->db, &eo, &r))) {
		char why[256];

		snprintf(c->err, c->errlen, "explaining the window: %s",
			 cw_store_read_strerror(c->db, ret, why, sizeof(why)));
		return ret;
	}
	if (cw_events_prepare_light(c->db, calls_sql, &s.calls) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, off_sql, -1, &s.off, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, io_sql, -1, &s.io, NULL) != SQLITE_OK) {
		snprintf(c->err, c->errlen, "reading chains: %s", sqlite3_errmsg(c->db));
		ret = -EIO;
		goto out;
	}
	for (int i = 0; i < r.count && !ret; i++)
		ret = emit_chain(c, &s, &r.chains[i], &flow_id);
	if (ret && !c->err[0])
		snprintf(c->err, c->errlen, "reading chains: %s", sqlite3_errmsg(c->db));
out:
	sqlite3_finalize(s.calls);
	sqlite3_finalize(s.off);
	sqlite3_finalize(s.io);
	free(s.iov);
	cw_explain_result_free(&r);
	return ret;
}
