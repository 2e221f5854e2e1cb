/* explain --nodes: the NCCL arrival analysis across agents. Each agent
 * alone sees one rank (or one node's ranks); the straggler, the hang and
 * the waiting ranks need every rank's collectives on one clock. The
 * agents' nccl_calls, their NCCL threads' off-CPU intervals, sessions,
 * processes, threads and newest snapshots are fetched through the
 * read-only query API into a private temporary store, the clock offsets
 * the fan-out measured are stored there as merge would (meta
 * 'merge.skew'), and the arrival rules (analysis/rules/nccl_chains.c) run
 * on it: the same analysis as on a merged database. */
#include "fleet/fanout_nccl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/engine.h"
#include "analysis/explain.h"
#include "fleet/fetch.h"
#include "store/store.h"
#include "util/utf8.h"

#define PER_NODE_ROWS 1000000

static const struct {
	const char *select, *insert;
	int ncols, nparams;
	int64_t limit;
} fetches[] = {
	{ "SELECT kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns, host, rank, local_rank, world_size, command"
	  " FROM sessions ORDER BY id",
	  "INSERT INTO sessions (node, kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns, host, rank,"
	  " local_rank, world_size, command) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
	  9, 0, 1000 },
	{ "SELECT pid, comm, rank, local_rank, world_size FROM processes",
	  "INSERT OR IGNORE INTO processes (node, pid, comm, rank, local_rank, world_size)"
	  " VALUES (?1,?2,?3,?4,?5,?6)",
	  5, 0, 100000 },
	{ "SELECT tid, pid, comm FROM threads WHERE tid IN (SELECT DISTINCT tid FROM nccl_calls)",
	  "INSERT OR IGNORE INTO threads (node, tid, pid, comm) VALUES (?1,?2,?3,?4)", 3, 0, 100000 },
	{ "SELECT session_id, pid, tid, comm, comm_id, rank, nranks, seq, op, count, datatype, bytes, redop, peer,"
	  " stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns FROM nccl_calls ORDER BY id DESC"
	  " LIMIT ?1",
	  "INSERT INTO nccl_calls (node, session_id, pid, tid, comm, comm_id, rank, nranks, seq, op, count, datatype,"
	  " bytes, redop, peer, stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns)"
	  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)",
	  21, 1, PER_NODE_ROWS },
	/* The lag windows are on the ranks' own calling threads. */
	{ "SELECT pid, tid, comm, start_mono_ns, end_mono_ns, wall_ns, duration_ns, reason, cpu, by_pid, by_tid,"
	  " by_comm, by_cgroup_id, waker_pid, waker_comm FROM offcpu"
	  " WHERE tid IN (SELECT DISTINCT tid FROM nccl_calls) ORDER BY id DESC LIMIT ?1",
	  "INSERT INTO offcpu (node, pid, tid, comm, start_mono_ns, end_mono_ns, wall_ns, duration_ns, reason, cpu,"
	  " by_pid, by_tid, by_comm, by_cgroup_id, waker_pid, waker_comm)"
	  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
	  15, 1, PER_NODE_ROWS },
	/* The newest time each agent saw: the hang clock. */
	{ "SELECT mono_ns, wall_ns FROM snapshots ORDER BY id DESC LIMIT ?1",
	  "INSERT INTO snapshots (node, mono_ns, wall_ns) VALUES (?1,?2,?3)", 2, 1, 2 },
};

static int skew_meta(sqlite3 *db, const struct cw_fleet_result *fr)
{
	json_t *skew = json_object(), *nodes = json_object();
	char *s;
	int ret;

	for (int i = 0; i < fr->n; i++)
		if (fr->nodes[i].ok && fr->nodes[i].skew.valid)
			cw_json_set(nodes, fr->nodes[i].name,
					    json_pack("{s:I}", "offset_ns", (json_int_t)fr->nodes[i].skew.offset_ns));
	json_object_set_new(skew, "method", json_string("fan-out NTP-style time samples"));
	json_object_set_new(skew, "nodes", nodes);
	s = json_dumps(skew, JSON_COMPACT);
	ret = s ? cw_meta_set(db, "merge.skew", s) : -ENOMEM;
	free(s);
	json_decref(skew);
	return ret;
}

/* An agent holding several ranks finds their arrival chains itself; the
 * fan-out finds them again from every agent's collectives. The fan-out's
 * is kept (every rank, one clock) and the agent's copy of the same kind
 * and rank dropped, so a chain is printed once. */
static json_t *drop_agent_copies(json_t *chains, const struct cw_chain *c)
{
	const char *kind = cw_kind_name(c->kind);
	json_t *node = NULL;

	for (size_t k = json_array_size(chains); k-- > 0;) {
		json_t *x = json_array_get(chains, k), *r = json_object_get(x, "rank");
		const char *xk = json_string_value(json_object_get(json_object_get(x, "root_cause"), "kind"));

		if (!xk || strcmp(xk, kind) || !strcmp(json_string_value(json_object_get(x, "agent")) ?: "", "fan-out"))
			continue;
		if (json_is_integer(r) ? json_integer_value(r) == c->rank : c->rank < 0) {
			/* The agent names the rank's own node (a file of several
			 * nodes served by one agent); the fan-out, the agent. */
			if (!node && json_is_string(json_object_get(x, "node")))
				node = json_incref(json_object_get(x, "node"));
			json_array_remove(chains, k);
		}
	}
	return node;
}

int cw_fleet_nccl_chains(const struct cw_fleet_opts *fo, const struct cw_fleet_result *fr, json_t *chains,
			 void (*warn)(void *arg, const char *msg), void *warn_arg, char *err, size_t errlen)
{
	enum { MAX_OUT = 2 + CW_NCCL_MAX_PEERS };
	struct cw_fleet_tmp tmp;
	struct cw_explain_opts eo = { 0 };
	struct cw_nccl_peers peers;
	struct cw_store *st;
	struct cw_chain *v = NULL;
	int n = 0, ret;

	err[0] = '\0';
	if ((ret = cw_fleet_tmp_open(&tmp, "nccl", "nccl.db", err, errlen)))
		goto out;
	st = tmp.st;
	if ((ret = skew_meta(st->db, fr)))
		goto out;
	for (size_t k = 0; k < sizeof(fetches) / sizeof(fetches[0]) && !ret; k++)
		ret = cw_fleet_fetch_into(st->db, fo, fetches[k].select, fetches[k].insert, fetches[k].ncols,
					  fetches[k].nparams, fetches[k].limit, 0, fetches[k].limit, warn, warn_arg, err,
					  errlen);
	if (ret)
		goto out;
	if (!(v = calloc(MAX_OUT, sizeof(*v)))) {
		ret = -ENOMEM;
		goto out;
	}
	n = cw_rule_nccl(st->db, &eo, 1, (uint64_t)INT64_MAX / 2, v, MAX_OUT, &peers);
	if (n < 0) {
		ret = n;
		snprintf(err, errlen, "NCCL arrival analysis: %s", strerror(-ret));
		goto out;
	}
	if (peers.note[0] && warn)
		warn(warn_arg, peers.note);
	for (int i = 0; i < n; i++) {
		json_t *j;

		/* As explain ranks them (docs/rules.md): a hang and a straggler
		 * HIGH, the ranks that wait for it LOW. */
		v[i].severity = v[i].kind == CW_KIND_NCCL_WAIT	  ? CW_SEV_LOW
				: v[i].kind == CW_KIND_COMM_BOUND ? (v[i].explained_share >= 0.5 ? CW_SEV_HIGH : CW_SEV_MEDIUM)
								  : CW_SEV_HIGH;
		json_t *node = drop_agent_copies(chains, &v[i]);

		j = cw_chain_to_json(&v[i]);
		if (j && node)
			json_object_set(j, "node", node);
		json_decref(node);
		/* Computed here, on this host's clock, from every agent. */
		json_object_set_new(j, "agent", json_string("fan-out"));
		json_object_set_new(j, "clock_offset_ns", json_integer(0));
		json_array_insert_new(chains, v[i].severity == CW_SEV_HIGH ? 0 : json_array_size(chains), j);
	}
	ret = n;
out:
	free(v);
	cw_fleet_tmp_close(&tmp);
	return ret;
}
