/* How trace stores a pass's chains (chains_store.h): an incident that goes
 * on from one pass to the next stays one row whose window grows, so an
 * always-on agent adds a row per incident, not one per chain per minute. */
#include "trace/chains_store.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "store/layout.h"
#include "store/store.h"
#include "trace/chains.h"

/* The ids of the kept slow calls of chain c (its incident's seconds, or
 * the pass's window), slowest first, as a JSON array. */
static json_t *evidence_calls(sqlite3 *db, const struct cw_chain *c, uint64_t from, uint64_t to)
{
	const char *sql;
	sqlite3_stmt *s = NULL;
	json_t *ids = json_array();

	if (!ids || !c->op[0] || cw_store_op_read_sql(db, c->op, CW_OP_READ_SLOWEST, &sql) < 0 ||
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		goto out;
	if (c->incident_from_ns)
		from = c->incident_from_ns, to = c->incident_to_ns;
	sqlite3_bind_text(s, 1, c->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, 0);
	sqlite3_bind_text(s, 3, c->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, (int64_t)from);
	sqlite3_bind_int64(s, 5, (int64_t)to);
	sqlite3_bind_int64(s, 6, c->pid);
	sqlite3_bind_int64(s, 7, CW_TRACE_CHAIN_IDS);
	while (sqlite3_step(s) == SQLITE_ROW)
		json_array_append_new(ids, json_integer(sqlite3_column_int64(s, 8)));
out:
	sqlite3_finalize(s);
	return ids;
}

int cw_trace_chains_evidence(sqlite3 *db, const struct cw_explain_result *r, char ***out)
{
	char **ids = calloc(r->count > 0 ? (size_t)r->count : 1, sizeof(*ids));

	*out = NULL;
	if (!ids)
		return -ENOMEM;
	for (int i = 0; i < r->count; i++) {
		json_t *j = evidence_calls(db, &r->chains[i], r->from_wall_ns, r->to_wall_ns);

		ids[i] = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (!ids[i]) {
			cw_trace_chains_evidence_free(ids, i);
			return -ENOMEM;
		}
	}
	*out = ids;
	return 0;
}

void cw_trace_chains_evidence_free(char **ids, int n)
{
	for (int i = 0; ids && i < n; i++)
		free(ids[i]);
	free(ids);
}

/* Marks the n chains rows just stored (ids first..first+n-1, in the
 * order of which[]: indices into r and ids): stored by trace, with their
 * evidence ids. */
static int mark_rows(sqlite3 *db, char *const *ids, const int *which, int n, int64_t first)
{
	static const char sql[] = "UPDATE chains SET json = json_set(json, '$.stored_by', 'trace',"
				  " '$.evidence_ids', json_object('calls', json(?1))) WHERE id = ?2";
	sqlite3_stmt *s = NULL;
	int rc, err = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	for (int i = 0; i < n && !err; i++) {
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, ids[which[i]], -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 2, first + i);
		rc = sqlite3_step(s);
		if (rc != SQLITE_DONE)
			err = cw_sqlite_errno(rc);
	}
	sqlite3_finalize(s);
	return err;
}

/* The newest row trace stored for the same incident as c whose window
 * ended at most gap_ns before from, not one this pass extended already
 * (taken, ntaken). The same incident: the same identity (chain_identity.c:
 * node, kind, op, the thread, the Python location), the same culprit pid (on
 * a busy machine the victim is preempted in every pass, by everyday
 * neighbours between the incidents: a row matched without its culprit
 * would absorb every later incident and keep the first pass's culprit);
 * and for an incident in time (c->incident_from_ns), a row whose own
 * incident ended at most CW_TRACE_INCIDENT_JOIN_NS before c's began (the
 * incident crossed the pass boundary), while a chain over its pass's
 * window continues only such a row. Returns its id, 0 when none, -errno. */
static int64_t find_running(sqlite3 *db, const struct cw_chain *c, uint64_t from, uint64_t gap_ns,
			    const int64_t *taken, int ntaken)
{
	static const char sql[] =
		"SELECT id FROM chains WHERE node = ?1 AND kind = ?2 AND op = ?3 AND pid IS ?4 AND tid IS ?5"
		" AND python_file IS ?6 AND python_line IS ?7 AND to_wall_ns >= ?8"
		" AND json_extract(json, '$.stored_by') = 'trace'"
		" AND json_extract(json, '$.culprit.pid') IS ?9"
		" AND CASE WHEN ?10 IS NULL THEN json_extract(json, '$.evidence.incident_to_ns') IS NULL"
		" ELSE json_extract(json, '$.evidence.incident_to_ns') >= ?10 END"
		" ORDER BY id DESC LIMIT 64";
	sqlite3_stmt *s = NULL;
	int64_t id = 0;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(s, 1, c->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, cw_kind_name(c->kind), -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, c->op, -1, SQLITE_STATIC);
	/* stored as NULL when unknown (cw_explain_store_chains) */
	if (c->pid)
		sqlite3_bind_int64(s, 4, c->pid);
	if (c->tid)
		sqlite3_bind_int64(s, 5, c->tid);
	if (c->has_python) {
		sqlite3_bind_text(s, 6, c->py_file, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 7, c->py_line);
	}
	sqlite3_bind_int64(s, 8, (int64_t)(from > gap_ns ? from - gap_ns : 0));
	/* "culprit": null when unknown (explain_report.c) */
	if (c->culprit.known) {
		sqlite3_bind_int64(s, 9, c->culprit.pid);
	}
	if (c->incident_from_ns)
		sqlite3_bind_int64(s, 10,
				   (int64_t)(c->incident_from_ns > CW_TRACE_INCIDENT_JOIN_NS
						     ? c->incident_from_ns - CW_TRACE_INCIDENT_JOIN_NS
						     : 0));
	while (!id && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t got = sqlite3_column_int64(s, 0);
		int dup = 0;

		for (int k = 0; k < ntaken; k++)
			dup |= taken[k] == got;
		if (!dup)
			id = got;
	}
	if (!id && rc != SQLITE_DONE)
		id = cw_sqlite_errno(rc);
	sqlite3_finalize(s);
	return id;
}

/* The row's window ends with this pass; it was last seen now; its counts
 * add the pass's; p99, tail and severity keep the worst seen; an incident
 * in time ends with the pass's part of it. */
static int extend_row(sqlite3 *db, int64_t id, const struct cw_chain *c, uint64_t to, uint64_t now)
{
	static const char sql[] =
		"UPDATE chains SET to_wall_ns = max(to_wall_ns, ?2), count = count + ?3, slow_count = slow_count + ?4,"
		" p99_ns = max(p99_ns, ?5), tail_ratio = max(tail_ratio, ?6),"
		" severity = CASE WHEN instr('LOW MEDIUM HIGH', ?7) > instr('LOW MEDIUM HIGH', severity) THEN ?7"
		" ELSE severity END,"
		" json = json_set(json, '$.count', count + ?3, '$.slow_count', slow_count + ?4,"
		" '$.p99_ns', max(p99_ns, ?5), '$.tail_ratio', max(tail_ratio, ?6),"
		" '$.severity', CASE WHEN instr('LOW MEDIUM HIGH', ?7) > instr('LOW MEDIUM HIGH', severity) THEN ?7"
		" ELSE severity END, '$.last_seen_wall_ns', ?8,"
		" '$.passes', coalesce(json_extract(json, '$.passes'), 1) + 1,"
		" '$.evidence.incident_to_ns', CASE WHEN ?9 IS NULL THEN json_extract(json, '$.evidence.incident_to_ns')"
		" ELSE max(?9, json_extract(json, '$.evidence.incident_to_ns')) END) WHERE id = ?1";
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, (int64_t)to);
	sqlite3_bind_int64(s, 3, (int64_t)c->count);
	sqlite3_bind_int64(s, 4, (int64_t)c->slow_count);
	sqlite3_bind_int64(s, 5, (int64_t)c->p99_ns);
	sqlite3_bind_double(s, 6, c->tail_ratio);
	sqlite3_bind_text(s, 7, cw_severity_name(c->severity), -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 8, (int64_t)now);
	if (c->incident_from_ns)
		sqlite3_bind_int64(s, 9, (int64_t)c->incident_to_ns);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_db_errno(db, rc);
}

/* Whether chain i is over the pass's window and another chain of the
 * pass is an incident in time of the same identity and culprit: the
 * pass's window chain names the hog of its incident (explain keeps both
 * when the incident is not most of the window's slow time), and the
 * incident's row, at its seconds, says all the window's would. */
static int covered(const struct cw_explain_result *r, int i)
{
	const struct cw_chain *w = &r->chains[i];

	if (w->incident_from_ns || !w->culprit.known)
		return 0;
	for (int k = 0; k < r->count; k++) {
		const struct cw_chain *c = &r->chains[k];

		if (c->incident_from_ns && c->kind == w->kind && !strcmp(c->op, w->op) && !strcmp(c->node, w->node) &&
		    c->pid == w->pid && c->tid == w->tid && c->culprit.known && c->culprit.pid == w->culprit.pid)
			return 1;
	}
	return 0;
}

int cw_trace_chains_store(sqlite3 *db, char *const *evidence, const struct cw_explain_result *r, uint64_t now_wall_ns,
			  uint64_t gap_ns, int *added, int *extended)
{
	struct cw_explain_result fresh = *r;
	int64_t *taken = NULL, id, first;
	int ntaken = 0, n, err = 0, *which = NULL;
	char **own = NULL;
	char *const *ids = evidence;

	*added = *extended = 0;
	if (r->count == 0)
		return 0;
	/* the chains no stored row continues, for cw_explain_store_chains */
	fresh.chains = malloc((size_t)r->count * sizeof(*fresh.chains));
	taken = malloc((size_t)r->count * sizeof(*taken));
	which = malloc((size_t)r->count * sizeof(*which));
	if (!fresh.chains || !taken || !which) {
		err = -ENOMEM;
		goto out;
	}
	fresh.count = 0;
	if (!ids) {
		if ((err = cw_trace_chains_evidence(db, r, &own)))
			goto out;
		ids = own;
	}
	/* A savepoint, not a transaction: on trace's writer connection the
	 * pass's rows go into the writer's open batch (chains.c). */
	if ((err = cw_sqlite_db_errno(db, sqlite3_exec(db, "SAVEPOINT chains_pass", NULL, NULL, NULL))))
		goto out;
	for (int i = 0; i < r->count; i++) {
		if (covered(r, i))
			continue;
		id = find_running(db, &r->chains[i], r->from_wall_ns, gap_ns, taken, ntaken);
		if (id < 0) {
			err = (int)id;
			break;
		}
		if (!id) {
			which[fresh.count] = i;
			fresh.chains[fresh.count++] = r->chains[i];
			continue;
		}
		if ((err = extend_row(db, id, &r->chains[i], r->to_wall_ns, now_wall_ns)))
			break;
		taken[ntaken++] = id;
	}
	if (!err && fresh.count > 0) {
		n = cw_explain_insert_chains(db, &fresh, now_wall_ns);
		if (n < 0)
			err = n;
		else if (n > 0) {
			first = sqlite3_last_insert_rowid(db) - n + 1;
			err = mark_rows(db, ids, which, n, first);
		}
	}
	if (!err)
		err = cw_sqlite_db_errno(db, sqlite3_exec(db, "RELEASE chains_pass", NULL, NULL, NULL));
	if (err) {
		/* Undoes the pass's rows only, never the batch around them
		 * (gone already when SQLite rolled the transaction back). */
		if (!sqlite3_get_autocommit(db)) {
			sqlite3_exec(db, "ROLLBACK TO chains_pass", NULL, NULL, NULL);
			sqlite3_exec(db, "RELEASE chains_pass", NULL, NULL, NULL);
		}
		goto out;
	}
	*extended = ntaken;
	*added = fresh.count;
out:
	cw_trace_chains_evidence_free(own, r->count);
	free(which);
	free(fresh.chains);
	free(taken);
	return err;
}
