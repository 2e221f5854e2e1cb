/* causeway merge: node databases -> one cluster database. See merge.h for
 * the contract and docs/merge.md for the user's view. */
#include "fleet/merge.h"
#include "fleet/merge_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/read_error.h"
#include "store/store.h"
#include "util/out_path.h"
#include "util/strbuf.h"
#include "util/utf8.h"

struct input_info {
	char **nodes;
	int nnodes;
	int64_t events;
};

static void input_info_free(struct input_info *ii)
{
	for (int i = 0; i < ii->nnodes; i++)
		free(ii->nodes[i]);
	free(ii->nodes);
	memset(ii, 0, sizeof(*ii));
}

static void progress(const struct cw_merge_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(const struct cw_merge_opts *o, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!o->progress)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	o->progress(o->progress_arg, buf);
}

/* The nodes an input holds. Events are covered by their aggregates (the
 * writer keeps both), so no full scan of events is needed. */
static int read_nodes(sqlite3 *db, struct input_info *ii)
{
	static const char sql[] =
		"SELECT node FROM sessions UNION SELECT node FROM aggregates UNION SELECT node FROM processes"
		" UNION SELECT node FROM chains UNION SELECT node FROM threads ORDER BY 1";
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 0);
		char **nv;
		if (!n)
			continue;
		if (ii->nnodes >= CW_MERGE_MAX_NODES) {
			rc = SQLITE_TOOBIG;
			break;
		}
		nv = realloc(ii->nodes, (size_t)(ii->nnodes + 1) * sizeof(*nv));
		if (!nv || !(nv[ii->nnodes] = strdup(n))) {
			if (nv)
				ii->nodes = nv;
			sqlite3_finalize(st);
			return -ENOMEM;
		}
		ii->nodes = nv;
		ii->nnodes++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return rc == SQLITE_TOOBIG ? -E2BIG : cw_sqlite_errno(rc);
	/* Schema v7 keeps events in two tables under the view: their
	 * largest ids are two seeks, the view's a scan. */
	rc = sqlite3_prepare_v2(db,
				"SELECT max((SELECT coalesce(max(id), 0) FROM calls),"
				" (SELECT coalesce(max(id), 0) FROM kevents))",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) FROM events", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	if (sqlite3_step(st) == SQLITE_ROW)
		ii->events = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

/* "file:" URI of path with mode=ro, so ATTACH can never write an input.
 * Characters with a meaning in URIs are percent-encoded. */
static int ro_uri(const char *path, struct strbuf *sb)
{
	char abs[PATH_MAX];
	const char *p = path;

	if (path[0] != '/') {
		if (!realpath(path, abs))
			return -errno;
		p = abs;
	}
	if (strbuf_adds(sb, "file:"))
		return -ENOMEM;
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		int err = (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f)
				  ? strbuf_addf(sb, "%%%02X", c)
				  : strbuf_addch(sb, (char)c);
		if (err)
			return err;
	}
	return strbuf_adds(sb, "?mode=ro");
}

/* The one integer sql answers; no_row when it answers no row, -EIO when it
 * does not prepare. */
static int64_t scalar(sqlite3 *db, const char *sql, int64_t no_row)
{
	sqlite3_stmt *st = NULL;
	int64_t v = no_row;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int64_t max_id(sqlite3 *db, const char *table)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM main.%s", table);
	return scalar(db, sql, 0);
}

static void bind_named(sqlite3_stmt *st, const char *name, int64_t v)
{
	int i = sqlite3_bind_parameter_index(st, name);
	if (i > 0)
		sqlite3_bind_int64(st, i, v);
}

static int64_t count_rows(sqlite3 *db, const char *schema, const char *table)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s.%s", schema, table);
	return scalar(db, sql, -EIO);
}

static int table_exists(sqlite3 *db, const char *schema, const char *table)
{
	char sql[128];
	sqlite3_stmt *st = NULL;
	int found = 0;

	snprintf(sql, sizeof(sql), "SELECT 1 FROM %s.sqlite_master WHERE type IN ('table', 'view') AND name = ?1", schema);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* Whether src.<table> has column col (an input of an older schema may not). */
static int column_exists(sqlite3 *db, const char *table, const char *col)
{
	sqlite3_stmt *st = NULL;
	int found = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1, 'src') WHERE name = ?2", -1, &st, NULL) !=
	    SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, col, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* Copies every table of the attached input "src" into main. */
static int copy_input(sqlite3 *db, const struct cw_merge_opts *o, int idx, struct cw_merge_result *r)
{
	const char *relabel = o->inputs[idx].relabel;
	int64_t soff, ooff, snoff, coff;
	sqlite3_stmt *st = NULL;
	int ret = 0, rc;

	if ((soff = max_id(db, "sessions")) < 0 || (ooff = max_id(db, "offcpu")) < 0 || (snoff = max_id(db, "snapshots")) < 0 ||
	    (coff = max_id(db, "chains")) < 0)
		return -EIO;
	if ((ret = cw_exec(db, "BEGIN")))
		return ret;
	for (int k = 0; k < CW_MT_MAX; k++) {
		enum cw_merge_table t = cw_merge_copy_order[k];
		int64_t n;

		/* Tables added by later schema versions are absent from
		 * older inputs (read-only, never migrated): nothing to copy. */
		if (!table_exists(db, "src", cw_merge_tables[t].name))
			continue;
		n = count_rows(db, "src", cw_merge_tables[t].name);

		if (n < 0) {
			ret = (int)n;
			goto out;
		}
		r->in_rows[t] += n;
		if (n > 100000)
			progress(o, "%s: %s, %lld rows", o->inputs[idx].path, cw_merge_tables[t].name, (long long)n);
		rc = sqlite3_prepare_v2(db,
					cw_merge_tables[t].new_col &&
							!column_exists(db, cw_merge_tables[t].name, cw_merge_tables[t].new_col)
						? cw_merge_tables[t].insert_old
						: cw_merge_tables[t].insert,
					-1, &st, NULL);
		if (rc != SQLITE_OK) {
			ret = cw_sqlite_errno(rc);
			goto out;
		}
		if (relabel)
			sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":relabel"), relabel, -1,
					  SQLITE_STATIC);
		bind_named(st, ":soff", soff);
		bind_named(st, ":ooff", ooff);
		bind_named(st, ":snoff", snoff);
		bind_named(st, ":coff", coff);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
		st = NULL;
		if (rc != SQLITE_DONE) {
			ret = cw_sqlite_errno(rc);
			goto out;
		}
		if (t == CW_MT_STACKS)
			ret = cw_exec(db, "DELETE FROM temp.stack_map;"
					  "INSERT INTO temp.stack_map SELECT s.id, m.id FROM src.stacks s"
					  " JOIN main.stacks m ON m.hash = s.hash");
		else if (t == CW_MT_PY_STACKS)
			ret = cw_exec(db, "DELETE FROM temp.pystack_map;"
					  "INSERT INTO temp.pystack_map SELECT s.id, m.id FROM src.py_stacks s"
					  " JOIN main.py_stacks m ON m.hash = s.hash");
		if (ret)
			goto out;
	}
	/* Other meta keys of the inputs (none are written today) are kept,
	 * the first input's value winning; merge's own are rewritten. */
	ret = cw_exec(db, "INSERT OR IGNORE INTO main.meta (key, value)"
			  " SELECT key, value FROM src.meta WHERE key NOT LIKE 'merge.%'");
	if (!ret)
		ret = cw_exec(db, "COMMIT");
out:
	/* The cause is taken before ROLLBACK resets SQLite's message to
	 * "not an error". */
	if (ret == -ETIMEDOUT)
		snprintf(r->err, sizeof(r->err), "interrupted");
	else if (ret) {
		char why[256];

		int ec = sqlite3_errcode(db) & 0xff;

		snprintf(r->err, sizeof(r->err), "%s",
			 ec != SQLITE_OK && ec != SQLITE_ROW && ec != SQLITE_DONE
				 ? sqlite3_errmsg(db)
				 : cw_store_read_strerror(db, ret, why, sizeof(why)));
	}
	if (ret && !sqlite3_get_autocommit(db))
		cw_exec(db, "ROLLBACK");
	return ret;
}

static int cancel_cb(void *arg)
{
	const struct cw_merge_opts *o = arg;
	return o->cancelled(o->cancel_arg);
}

static int per_node_counts(sqlite3 *db, struct cw_merge_result *r)
{
	char sql[128];
	sqlite3_stmt *st = NULL;

	for (int t = 0; t < CW_MT_MAX; t++) {
		int64_t n = count_rows(db, "main", cw_merge_tables[t].name);
		if (n < 0)
			return (int)n;
		r->rows[t] = n;
		if (!cw_merge_tables[t].has_node)
			continue;
		snprintf(sql, sizeof(sql), "SELECT node, count(*) FROM main.%s GROUP BY node", cw_merge_tables[t].name);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
			return -EIO;
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *node = (const char *)sqlite3_column_text(st, 0);
			for (int i = 0; node && i < r->nnodes; i++)
				if (!strcmp(r->nodes[i].name, node))
					r->nodes[i].rows[t] = sqlite3_column_int64(st, 1);
		}
		sqlite3_finalize(st);
	}
	return 0;
}

/* meta 'merge.sources' and 'merge.skew', read by export and docs/merge.md. */
static int write_meta(sqlite3 *db, const struct cw_merge_opts *o, const struct cw_merge_result *r)
{
	json_t *src = json_array(), *skew = json_object(), *nodes = json_object();
	char *s1 = NULL, *s2 = NULL;
	int ret = -ENOMEM;

	if (!src || !skew || !nodes)
		goto out;
	for (int i = 0; i < r->nnodes; i++) {
		const struct cw_merge_node *n = &r->nodes[i];
		const struct cw_merge_skew *k = &r->skew[i];
		json_array_append_new(src, json_pack("{s:o,s:o,s:o}", "node", cw_json_str(n->name), "input",
						     cw_json_str(o->inputs[n->input].path), "node_in_input", cw_json_str(n->orig)));
		if (k->known)
			cw_json_set(nodes, n->name,
					    json_pack("{s:I,s:I,s:i,s:s}", "offset_ns", (json_int_t)k->offset_ns,
						      "spread_ns", (json_int_t)k->spread_ns, "samples", k->samples, "signal",
						      cw_merge_skew_signal(k)));
	}
	json_object_set_new(skew, "method", json_string("nccl collective completion"));
	json_object_set_new(skew, "reference", r->reference[0] ? cw_json_str(r->reference) : json_null());
	json_object_set(skew, "nodes", nodes);
	s1 = json_dumps(src, JSON_COMPACT);
	s2 = json_dumps(skew, JSON_COMPACT);
	if (!s1 || !s2)
		goto out;
	ret = cw_meta_set(db, "merge.sources", s1);
	if (!ret)
		ret = cw_meta_set(db, "merge.skew", s2);
out:
	free(s1);
	free(s2);
	json_decref(src);
	json_decref(skew);
	json_decref(nodes);
	return ret;
}

/* Whether every table of the input is one merge copies: a table it does
 * not know (a newer or a foreign schema) would be lost without a word, so
 * it stops the merge before anything is written. */
static int known_tables(sqlite3 *db, const char *path, struct cw_merge_result *r)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(db,
				"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
				" ORDER BY name",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 0);
		int known = 0;

		for (int t = 0; n && !known && t < CW_MT_MAX; t++)
			known = !strcmp(cw_merge_tables[t].name, n);
		for (int k = 0; n && !known && cw_merge_via_other[k]; k++)
			known = !strcmp(cw_merge_via_other[k], n);
		if (n && !known) {
			snprintf(r->err, sizeof(r->err),
				 "\"%s\" has a table merge does not know (\"%.64s\"); its rows would be lost, so nothing"
				 " was merged (a newer causeway may know it)",
				 path, n);
			ret = -EPROTONOSUPPORT;
		}
	}
	sqlite3_finalize(st);
	if (!ret && rc != SQLITE_DONE)
		ret = cw_sqlite_errno(rc);
	return ret;
}

/* Validates every input and decides each node's name in the output. */
static int plan(const struct cw_merge_opts *o, struct input_info *info, struct cw_merge_result *r)
{
	char err[512];
	int ret;

	for (int i = 0; i < o->ninputs; i++) {
		struct cw_store *st = NULL;
		const char *rl = o->inputs[i].relabel;

		ret = cw_store_open(&st, o->inputs[i].path, CW_STORE_READONLY, err, sizeof(err));
		if (ret) {
			snprintf(r->err, sizeof(r->err), "%s", err);
			return ret;
		}
		ret = read_nodes(st->db, &info[i]);
		if (!ret && (ret = known_tables(st->db, o->inputs[i].path, r)) == -EPROTONOSUPPORT) {
			cw_store_close(st);
			return ret;
		}
		if (ret)
			snprintf(r->err, sizeof(r->err), "reading \"%s\": %s", o->inputs[i].path,
				 ret == -ENOTSUP ? "database is corrupt"
						 : cw_store_read_strerror(st->db, ret, err, sizeof(err)));
		cw_store_close(st);
		if (ret)
			return ret == -ENOTSUP ? ret : -EIO;
		if (rl && (!*rl || strlen(rl) >= sizeof(r->nodes[0].name))) {
			snprintf(r->err, sizeof(r->err), "invalid node name \"%s\" for \"%s\"", rl, o->inputs[i].path);
			return -EINVAL;
		}
		if (rl && info[i].nnodes > 1) {
			snprintf(r->err, sizeof(r->err),
				 "cannot relabel \"%s\": it holds %d nodes (\"%s\", \"%s\", ...)", o->inputs[i].path,
				 info[i].nnodes, info[i].nodes[0], info[i].nodes[1]);
			return -EINVAL;
		}
		for (int k = 0; k < info[i].nnodes; k++) {
			const char *name = rl ? rl : info[i].nodes[k];
			struct cw_merge_node *nv;

			for (int j = 0; j < r->nnodes; j++)
				if (!strcmp(r->nodes[j].name, name)) {
					snprintf(r->err, sizeof(r->err),
						 "\"%s\" and \"%s\" both hold node \"%s\"; relabel one with"
						 " --force-node %s=NEWNAME",
						 o->inputs[r->nodes[j].input].path, o->inputs[i].path, name,
						 o->inputs[i].path);
					return -EEXIST;
				}
			if (r->nnodes >= CW_MERGE_MAX_NODES || strlen(info[i].nodes[k]) >= sizeof(nv->name)) {
				snprintf(r->err, sizeof(r->err), "too many or too long node names in \"%s\"",
					 o->inputs[i].path);
				return -E2BIG;
			}
			nv = realloc(r->nodes, (size_t)(r->nnodes + 1) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			r->nodes = nv;
			memset(&nv[r->nnodes], 0, sizeof(nv[0]));
			snprintf(nv[r->nnodes].name, sizeof(nv->name), "%s", name);
			snprintf(nv[r->nnodes].orig, sizeof(nv->orig), "%s", info[i].nodes[k]);
			nv[r->nnodes].input = i;
			r->nnodes++;
		}
	}
	return 0;
}

/* Staged events of every input -> main.events, ids in wall-clock order. */
static int order_events(sqlite3 *db, const struct cw_merge_opts *o, struct cw_merge_result *r)
{
	int ret;

	if (r->in_rows[CW_MT_EVENTS] > 100000)
		progress(o, "writing %lld events in time order", (long long)r->in_rows[CW_MT_EVENTS]);
	if ((ret = cw_exec(db, "BEGIN")))
		return ret;
	ret = cw_exec(db, "INSERT INTO main.events (node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id,"
			  " comm, source, op, duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device,"
			  " stack_id, py_stack_id, anomalous)"
			  " SELECT node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op,"
			  " duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id, py_stack_id,"
			  " anomalous FROM temp.events_stage ORDER BY wall_ns, node, seq");
	if (!ret)
		ret = cw_exec(db, "COMMIT");
	if (ret && !sqlite3_get_autocommit(db))
		cw_exec(db, "ROLLBACK");
	else if (!ret)
		ret = cw_exec(db, "DROP TABLE temp.events_stage");
	return ret;
}

static int64_t wall_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The merge itself is a session of the output (kind 'merge', the merging
 * host, the inputs in command), written first so that every node's own
 * sessions come after it (readers take a node's clock offset from its
 * latest session). Its node is the first merged node: a session needs
 * one, and the merging host is not a node of the data. It also tells
 * demo that the file is not a demo database. */
static int record_session(sqlite3 *db, const struct cw_merge_opts *o, const struct cw_merge_result *r)
{
	struct strbuf cmd = STRBUF_INIT;
	sqlite3_stmt *st = NULL;
	char host[256] = "";
	int ret = strbuf_adds(&cmd, "causeway merge");

	for (int i = 0; !ret && i < o->ninputs; i++)
		ret = strbuf_addf(&cmd, " %s", o->inputs[i].path);
	if (!ret)
		ret = strbuf_addf(&cmd, " -o %s", o->out_path);
	if (ret)
		goto out;
	gethostname(host, sizeof(host) - 1);
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO main.sessions (node, kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns,"
			       " host, command) VALUES (?1, 'merge', ?2, NULL, 0, ?3, ?4)",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_text(st, 1, r->nnodes ? r->nodes[0].name : host, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, wall_now_ns());
	sqlite3_bind_text(st, 3, host, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, strbuf_str(&cmd), -1, SQLITE_STATIC);
	ret = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
out:
	sqlite3_finalize(st);
	strbuf_release(&cmd);
	return ret;
}

static int fill(sqlite3 *db, const struct cw_merge_opts *o, struct cw_merge_result *r)
{
	struct strbuf uri = STRBUF_INIT;
	sqlite3_stmt *att = NULL;
	int ret;

	/* The temporary file is thrown away on failure, so the load needs
	 * neither a journal nor fsyncs; WAL is restored before the rename. */
	ret = cw_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536;"
			  "CREATE TEMP TABLE stack_map (old INTEGER PRIMARY KEY, new INTEGER);"
			  "CREATE TEMP TABLE events_stage AS SELECT * FROM main.events WHERE 0;"
			  "CREATE TEMP TABLE pystack_map (old INTEGER PRIMARY KEY, new INTEGER)");
	if (ret) {
		snprintf(r->err, sizeof(r->err), "preparing \"%s\": %s", o->out_path, sqlite3_errmsg(db));
		return ret;
	}
	if ((ret = record_session(db, o, r))) {
		snprintf(r->err, sizeof(r->err), "recording the merge in \"%s\": %s", o->out_path,
			 sqlite3_errmsg(db));
		return ret;
	}
	if (sqlite3_prepare_v2(db, "ATTACH ?1 AS src", -1, &att, NULL) != SQLITE_OK) {
		snprintf(r->err, sizeof(r->err), "attach: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	for (int i = 0; i < o->ninputs; i++) {
		strbuf_reset(&uri);
		if ((ret = ro_uri(o->inputs[i].path, &uri))) {
			snprintf(r->err, sizeof(r->err), "input \"%s\": %s", o->inputs[i].path, cw_store_strerror(ret));
			break;
		}
		progress(o, "merging \"%s\" (%d/%d)", o->inputs[i].path, i + 1, o->ninputs);
		sqlite3_bind_text(att, 1, strbuf_str(&uri), -1, SQLITE_TRANSIENT);
		ret = sqlite3_step(att) == SQLITE_DONE ? 0 : cw_sqlite_errno(sqlite3_errcode(db));
		sqlite3_reset(att);
		if (ret) {
			snprintf(r->err, sizeof(r->err), "cannot attach \"%s\": %s", o->inputs[i].path,
				 sqlite3_errmsg(db));
			break;
		}
		ret = copy_input(db, o, i, r);
		if (ret) {
			char why[256];

			snprintf(why, sizeof(why), "%.200s", r->err);
			snprintf(r->err, sizeof(r->err), "merging \"%s\": %s", o->inputs[i].path, why);
		}
		cw_exec(db, "DETACH src");
		if (ret)
			break;
	}
	sqlite3_finalize(att);
	strbuf_release(&uri);
	if (ret)
		return ret == -ETIMEDOUT ? -EINTR : ret;
	if ((ret = order_events(db, o, r))) {
		snprintf(r->err, sizeof(r->err), "writing events of \"%s\": %s", o->out_path,
			 ret == -ETIMEDOUT ? "interrupted" : sqlite3_errmsg(db));
		return ret == -ETIMEDOUT ? -EINTR : ret;
	}
	progress(o, "counting rows and estimating clock skew");
	if ((ret = per_node_counts(db, r)) || (ret = cw_merge_estimate_skew(db, r)) ||
	    (ret = write_meta(db, o, r))) {
		snprintf(r->err, sizeof(r->err), "finishing \"%s\": %s", o->out_path,
			 ret == -ETIMEDOUT ? "interrupted" : sqlite3_errmsg(db));
		return ret == -ETIMEDOUT ? -EINTR : ret;
	}
	{
		char sql[128];

		snprintf(sql, sizeof(sql), "UPDATE main.sessions SET ended_wall_ns = %lld WHERE kind = 'merge' AND id = 1",
			 (long long)wall_now_ns());
		ret = cw_exec(db, sql);
	}
	if (ret || (ret = cw_exec(db, "PRAGMA journal_mode = WAL"))) {
		snprintf(r->err, sizeof(r->err), "finishing \"%s\": %s", o->out_path, sqlite3_errmsg(db));
		return ret;
	}
	return 0;
}

int cw_merge_run(const struct cw_merge_opts *o, struct cw_merge_result *r)
{
	struct input_info *info = NULL;
	struct cw_store *st = NULL;
	struct cw_out out;
	struct cw_out_rule rule = { NULL, o->ninputs, CW_OUT_DB | (o->overwrite ? CW_OUT_REPLACE : 0) };
	const char **paths = NULL;
	sqlite3 *db = NULL;
	const char *tmp;
	int ret, fd;

	memset(r, 0, sizeof(*r));
	memset(&out, 0, sizeof(out));
	out.fd = out.dirfd = out.slot = -1;
	if (o->ninputs < 1 || o->ninputs > CW_MERGE_MAX_INPUTS || !o->out_path || !*o->out_path) {
		snprintf(r->err, sizeof(r->err), "between 1 and %d inputs and an output are needed",
			 CW_MERGE_MAX_INPUTS);
		return -EINVAL;
	}
	if (!(paths = calloc((size_t)o->ninputs, sizeof(*paths))))
		return -ENOMEM;
	for (int i = 0; i < o->ninputs; i++)
		paths[i] = o->inputs[i].path;
	rule.inputs = paths;
	/* The output rule (util/out_path.h): never an input or an input's
	 * WAL, never over a device, FIFO or a link itself. */
	if ((ret = cw_out_resolve(&out, o->out_path, &rule, r->err, sizeof(r->err)))) {
		if (ret == -EEXIST)
			snprintf(r->err, sizeof(r->err), "output \"%s\" exists; remove it or pass --force", o->out_path);
		goto out;
	}
	if (!(info = calloc((size_t)o->ninputs, sizeof(*info)))) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = plan(o, info, r)))
		goto out;
	if ((fd = cw_out_tmp(&out, r->err, sizeof(r->err))) < 0) {
		ret = fd;
		goto out;
	}
	close(fd);
	if (!(tmp = out.tmp_path)) {
		ret = -ENOMEM;
		goto out;
	}
	/* The schema comes from the store itself, so the output is exactly
	 * what trace would have created. */
	if ((ret = cw_store_open(&st, tmp, CW_STORE_CREATE, r->err, sizeof(r->err))))
		goto out;
	cw_store_close(st);
	if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(r->err, sizeof(r->err), "cannot open \"%s\": %s", tmp, db ? sqlite3_errmsg(db) : "no memory");
		ret = -EIO;
		goto out;
	}
	if (o->cancelled)
		sqlite3_progress_handler(db, 10000, cancel_cb, (void *)o);
	if ((ret = fill(db, o, r)))
		goto out;
	if (sqlite3_close(db) != SQLITE_OK) {
		snprintf(r->err, sizeof(r->err), "closing \"%s\" failed", tmp);
		db = NULL;
		ret = -EIO;
		goto out;
	}
	db = NULL;
	/* The replaced file's stale WAL goes first (CW_OUT_DB). */
	if ((ret = cw_out_commit(&out, r->err, sizeof(r->err)))) {
		if (ret == -EEXIST)
			snprintf(r->err, sizeof(r->err), "output \"%s\" exists; remove it or pass --force", o->out_path);
		goto out;
	}
	progress(o, "wrote \"%s\"", o->out_path);
out:
	if (db)
		sqlite3_close_v2(db);
	cw_out_release(&out);
	for (int i = 0; info && i < o->ninputs; i++)
		input_info_free(&info[i]);
	free(info);
	free(paths);
	/* A stop request can surface as any failure (a statement interrupted
	 * between two others leaves SQLite's message at "not an error"): with
	 * one pending, the merge was interrupted, whatever failed last. */
	if (ret && ret != -EINTR && o->cancelled && o->cancelled(o->cancel_arg))
		ret = -EINTR;
	return ret;
}

void cw_merge_result_free(struct cw_merge_result *r)
{
	if (!r)
		return;
	free(r->nodes);
	free(r->skew);
	r->nodes = NULL;
	r->skew = NULL;
	r->nnodes = 0;
}
