#include "store/ro_query.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/ro_guard.h"
#include "store/store.h"
#include "util/timeutil.h"

struct cw_ro_db {
	struct cw_store *st;
	struct cw_ro_guard *guard;
	char denied[128];   /* what the authorizer refused first, for the message */
	char denial[128];   /* scratch for the current refusal */
	uint64_t deadline_ns;
	int timed_out;
	const atomic_int *cancel; /* cw_ro_set_cancel */
};

/* PRAGMAs that only read, callable with a table/index name argument. */
static const char *const pragma_with_arg[] = {
	"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo",
	"foreign_key_list", "table_list", NULL,
};
/* PRAGMAs that read when called without an argument and write with one. */
static const char *const pragma_getter[] = {
	"user_version", "schema_version", "application_id", "page_size", "page_count",
	"freelist_count", "encoding", "data_version", "database_list", "collation_list",
	"function_list", "pragma_list", "module_list", "compile_options", "journal_mode",
	"query_only", NULL,
};

static int in_list(const char *const *list, const char *s)
{
	for (; s && *list; list++)
		if (!strcasecmp(*list, s))
			return 1;
	return 0;
}

static const char *action_name(int action, const char *a3)
{
	switch (action) {
	case SQLITE_INSERT: return "INSERT";
	case SQLITE_UPDATE: return "UPDATE";
	case SQLITE_DELETE: return "DELETE";
	case SQLITE_ATTACH: return "ATTACH";
	case SQLITE_DETACH: return "DETACH";
	case SQLITE_ALTER_TABLE: return "ALTER TABLE";
	case SQLITE_REINDEX: return "REINDEX";
	case SQLITE_ANALYZE: return "ANALYZE";
	case SQLITE_TRANSACTION: return a3 ? a3 : "a transaction";
	case SQLITE_SAVEPOINT: return "SAVEPOINT";
	case SQLITE_CREATE_INDEX:
	case SQLITE_CREATE_TEMP_INDEX: return "CREATE INDEX";
	case SQLITE_CREATE_TABLE:
	case SQLITE_CREATE_TEMP_TABLE: return "CREATE TABLE";
	case SQLITE_CREATE_TRIGGER:
	case SQLITE_CREATE_TEMP_TRIGGER: return "CREATE TRIGGER";
	case SQLITE_CREATE_VIEW:
	case SQLITE_CREATE_TEMP_VIEW: return "CREATE VIEW";
	case SQLITE_CREATE_VTABLE: return "CREATE VIRTUAL TABLE";
	case SQLITE_DROP_INDEX:
	case SQLITE_DROP_TEMP_INDEX: return "DROP INDEX";
	case SQLITE_DROP_TABLE:
	case SQLITE_DROP_TEMP_TABLE: return "DROP TABLE";
	case SQLITE_DROP_TRIGGER:
	case SQLITE_DROP_TEMP_TRIGGER: return "DROP TRIGGER";
	case SQLITE_DROP_VIEW:
	case SQLITE_DROP_TEMP_VIEW: return "DROP VIEW";
	case SQLITE_DROP_VTABLE: return "DROP VIRTUAL TABLE";
	default: return "this statement";
	}
}

static int authorize_action(struct cw_ro_db *q, int action, const char *a3, const char *a4);

static int authorize(void *arg, int action, const char *a3, const char *a4, const char *dbname,
		     const char *trigger)
{
	struct cw_ro_db *q = arg;
	int rc = authorize_action(q, action, a3, a4);

	(void)dbname;
	(void)trigger;
	if (rc == SQLITE_DENY && !q->denied[0])
		snprintf(q->denied, sizeof(q->denied), "%s", q->denial);
	return rc;
}

static int authorize_action(struct cw_ro_db *q, int action, const char *a3, const char *a4)
{
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_FUNCTION:
		/* a4 is the function name. load_extension is also disabled on
		 * the connection; refusing it here gives a clearer message. */
		if (a4 && !strcasecmp(a4, "load_extension")) {
			snprintf(q->denial, sizeof(q->denial), "load_extension()");
			return SQLITE_DENY;
		}
		/* Hands out a pointer into libsqlite3 and, with two
		 * arguments, installs one (ro_guard.c turns that off too). */
		if (a4 && !strcasecmp(a4, "fts3_tokenizer")) {
			snprintf(q->denial, sizeof(q->denial), "fts3_tokenizer()");
			return SQLITE_DENY;
		}
		return SQLITE_OK;
	case SQLITE_INSERT:
	case SQLITE_UPDATE:
	case SQLITE_DELETE:
		/* Writes to the schema table are asked for on behalf of other
		 * statements: DDL asks for INSERT/DELETE on sqlite_master before
		 * its own CREATE/DROP action (refused next, with its name), and
		 * SQLite 3.40 asks for UPDATE on it while preparing a SELECT over
		 * a table-valued pragma (pragma_table_info(...)). A statement
		 * that really writes it is still refused: SQLite rejects it
		 * ("may not be modified"), sqlite3_stmt_readonly() is checked
		 * after prepare, and the connection is read-only. */
		if (a3 && (!strcmp(a3, "sqlite_master") || !strcmp(a3, "sqlite_temp_master") ||
			   !strcmp(a3, "sqlite_schema") || !strcmp(a3, "sqlite_temp_schema")))
			return SQLITE_OK;
		snprintf(q->denial, sizeof(q->denial), "%s", action_name(action, a3));
		return SQLITE_DENY;
	case SQLITE_PRAGMA:
		/* a3 is the pragma, a4 its argument or NULL. */
		if (in_list(pragma_with_arg, a3) || (!a4 && in_list(pragma_getter, a3)))
			return SQLITE_OK;
		snprintf(q->denial, sizeof(q->denial), "PRAGMA %s%s", a3 ? a3 : "", a4 ? " with a value" : "");
		return SQLITE_DENY;
	default:
		snprintf(q->denial, sizeof(q->denial), "%s", action_name(action, a3));
		return SQLITE_DENY;
	}
}

static int progress(void *arg)
{
	struct cw_ro_db *q = arg;

	if (q->cancel && atomic_load(q->cancel))
		return 1;
	if (cw_monotonic_ns() < q->deadline_ns)
		return 0;
	q->timed_out = 1;
	return 1;
}

int cw_ro_is_db_error(int rc)
{
	switch (rc) {
	case -ENOENT:
	case -ENOTSUP:
	case -EBUSY:
	case -EPROTO:
	case -EACCES:
	case -EISDIR:
	case -EIO:
	case -ENOSPC:
	case -EROFS:
	case -EUCLEAN:
	case -EXDEV:
		return 1;
	default:
		return 0;
	}
}

/* The names other tools' articles and queries use for the event views'
 * columns, beside causeway's own: `duration` is `duration_ns` (ns). Temp
 * views of the same names come first in name resolution on this
 * connection only, so the file (read-only) is not touched and a store of
 * any schema version answers to them. */
static int column_aliases(sqlite3 *db)
{
	static const char *const views[] = { "events", "cuda_events", "nccl_events" };
	int err = cw_exec(db, "PRAGMA query_only = 0");

	for (size_t i = 0; !err && i < sizeof(views) / sizeof(views[0]); i++) {
		char sql[256];
		sqlite3_stmt *st = NULL;
		int have = 0;

		if (sqlite3_prepare_v2(db, "SELECT 1 FROM main.sqlite_master WHERE name = ?1 AND type IN ('table', 'view')",
				       -1, &st, NULL) != SQLITE_OK)
			break;
		sqlite3_bind_text(st, 1, views[i], -1, SQLITE_STATIC);
		have = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		if (!have)
			continue;
		snprintf(sql, sizeof(sql), "CREATE TEMP VIEW IF NOT EXISTS %s AS SELECT *, duration_ns AS duration FROM main.%s",
			 views[i], views[i]);
		err = cw_exec(db, sql);
		/* A write to a view without triggers fails at prepare with
		 * "cannot modify"; with these it reaches the authorizer, which
		 * refuses it as every write is refused ("query is read-only"). */
		for (int k = 0; !err && k < 3; k++) {
			static const char *const what[] = { "INSERT", "UPDATE", "DELETE" };

			snprintf(sql, sizeof(sql),
				 "CREATE TEMP TRIGGER IF NOT EXISTS %s_ro_%d INSTEAD OF %s ON %s"
				 " BEGIN SELECT RAISE(ABORT, 'read-only'); END",
				 views[i], k, what[k], views[i]);
			err = cw_exec(db, sql);
		}
	}
	if (!err)
		err = cw_exec(db, "PRAGMA query_only = 1");
	return err;
}

int cw_ro_open(struct cw_ro_db **out, const char *db_path, char *err, size_t errlen)
{
	struct cw_ro_db *q;
	sqlite3 *db;
	int rc;

	*out = NULL;
	q = calloc(1, sizeof(*q));
	if (!q) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = cw_store_open(&q->st, db_path, CW_STORE_READONLY, err, errlen);
	if (rc) {
		free(q);
		return rc;
	}
	db = q->st->db;
	if ((rc = column_aliases(db))) {
		snprintf(err, errlen, "preparing the event views: %s", sqlite3_errmsg(db));
		cw_ro_close(q);
		return rc;
	}
	/* Belt and braces: the file is opened read-only and query_only is on,
	 * but the authorizer is what turns a write into a clear refusal at
	 * prepare time instead of a late "readonly database" error. */
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA /* SQLite >= 3.31 */
	sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
#endif
	rc = cw_ro_guard_attach(db, &q->guard);
	if (rc) {
		cw_ro_close(q);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	sqlite3_set_authorizer(db, authorize, q);
	sqlite3_progress_handler(db, 1000, progress, q);
	*out = q;
	return 0;
}

void cw_ro_close(struct cw_ro_db *q)
{
	if (!q)
		return;
	/* The guard's functions are the connection's: it goes after. */
	cw_store_close(q->st);
	cw_ro_guard_free(q->guard);
	free(q);
}

/* Skips whitespace, semicolons and comments; returns where real text
 * starts (or the end). */
static const char *skip_noise(const char *p)
{
	for (;;) {
		while (*p && (isspace((unsigned char)*p) || *p == ';'))
			p++;
		if (p[0] == '-' && p[1] == '-') {
			p = strchr(p, '\n');
			if (!p)
				return "";
		} else if (p[0] == '/' && p[1] == '*') {
			p = strstr(p + 2, "*/");
			if (!p)
				return "";
			p += 2;
		} else {
			return p;
		}
	}
}

/* SQLite names the missing object bare ("no such table: foo"); commands
 * quote user data, so quote it. */
static void sql_error(char *err, size_t errlen, const char *msg)
{
	static const char *const named[] = {
		"no such table: ", "no such column: ", "no such function: ",
		"ambiguous column name: ", "no such collation sequence: ", "no such module: ",
		"no such index: ", "no such view: ", NULL,
	};
	const char *const *n;

	for (n = named; *n; n++) {
		size_t l = strlen(*n);

		if (!strncmp(msg, *n, l)) {
			snprintf(err, errlen, "sql error: %.*s\"%s\"", (int)l, msg, msg + l);
			return;
		}
	}
	snprintf(err, errlen, "sql error: %s", msg);
}

static void limit_text(uint64_t ns, char *buf, size_t len)
{
	if (ns % 1000000000ULL == 0)
		snprintf(buf, len, "%llu s", (unsigned long long)(ns / 1000000000ULL));
	else
		snprintf(buf, len, "%llu ms", (unsigned long long)(ns / 1000000ULL));
}

/* The first word of the statement, for refusals caught after prepare. */
static void first_word(const char *sql, char *buf, size_t len)
{
	const char *p = skip_noise(sql);
	size_t i = 0;

	while (p[i] && isalpha((unsigned char)p[i]) && i + 1 < len) {
		buf[i] = (char)toupper((unsigned char)p[i]);
		i++;
	}
	buf[i] = '\0';
	if (!i)
		snprintf(buf, len, "this statement");
}

/* What the refusal names: the authorizer's action when it describes the
 * statement (CREATE INDEX, PRAGMA x, or the INSERT inside a WITH), else
 * the statement's first word (ANALYZE asks to CREATE TABLE sqlite_stat1
 * first, which would be a confusing name). */
static const char *refused_name(const char *denied, const char *word)
{
	if (!denied[0])
		return word;
	if (!strcmp(word, "WITH") || !strcmp(word, "SELECT") || !strcmp(word, "VALUES") ||
	    !strcmp(word, "EXPLAIN") || !strncmp(denied, word, strlen(word)) ||
	    !strncmp(denied, "load_extension", 14) || !strncmp(denied, "fts3_tokenizer", 14))
		return denied;
	return word;
}

static int bind_params(sqlite3_stmt *st, const struct cw_ro_value *params, int nparams,
		       char *err, size_t errlen)
{
	int want = sqlite3_bind_parameter_count(st), i, rc = SQLITE_OK;

	if (want != nparams) {
		snprintf(err, errlen, "query has %d parameter%s but %d value%s given", want,
			 want == 1 ? "" : "s", nparams, nparams == 1 ? " was" : "s were");
		return -EINVAL;
	}
	for (i = 0; i < nparams && rc == SQLITE_OK; i++) {
		const struct cw_ro_value *v = &params[i];

		switch (v->type) {
		case CW_RO_INT:
			rc = sqlite3_bind_int64(st, i + 1, v->i);
			break;
		case CW_RO_REAL:
			rc = sqlite3_bind_double(st, i + 1, v->d);
			break;
		case CW_RO_TEXT:
			rc = sqlite3_bind_text(st, i + 1, v->p, (int)v->len, SQLITE_TRANSIENT);
			break;
		case CW_RO_BLOB:
			rc = sqlite3_bind_blob(st, i + 1, v->p, (int)v->len, SQLITE_TRANSIENT);
			break;
		default:
			rc = sqlite3_bind_null(st, i + 1);
		}
	}
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot bind parameter %d: %s", i, sqlite3_errstr(rc));
		return -EINVAL;
	}
	return 0;
}

static int step_error(struct cw_ro_db *q, const struct cw_ro_query_limits *lim, const char *sql,
		      int rc, char *err, size_t errlen)
{
	sqlite3 *db = q->st->db;
	char buf[48];

	switch (rc & 0xff) {
	case SQLITE_INTERRUPT:
		if (q->cancel && atomic_load(q->cancel)) {
			snprintf(err, errlen, "query cancelled");
			return -ECANCELED;
		}
		limit_text(lim->timeout_ns, buf, sizeof(buf));
		snprintf(err, errlen, "query exceeded %s limit", buf);
		return -ETIMEDOUT;
	case SQLITE_READONLY:
	case SQLITE_AUTH:
		first_word(sql, buf, sizeof(buf));
		snprintf(err, errlen, "query is read-only: %s not allowed", refused_name(q->denied, buf));
		return -EPERM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		snprintf(err, errlen, "database \"%s\" is locked by another process; try again when it finishes",
			 q->st->path);
		return -EBUSY;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		snprintf(err, errlen, "database \"%s\" is corrupt: %s", q->st->path, sqlite3_errmsg(db));
		return -ENOTSUP;
	case SQLITE_NOMEM:
		if (cw_ro_heap_refused())
			snprintf(err, errlen, "query exceeded the %lld MiB memory limit",
				 (long long)(CW_RO_MAX_HEAP_BYTES >> 20));
		else
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	case SQLITE_IOERR:
		snprintf(err, errlen, "database \"%s\": %s", q->st->path, sqlite3_errmsg(db));
		return -EIO;
	default:
		/* A refused function comes back as a plain error; SQLite's own
		 * refusal to touch its schema table is a write refused like any
		 * other. */
		if (q->denied[0] || strstr(sqlite3_errmsg(db), "may not be modified")) {
			first_word(sql, buf, sizeof(buf));
			snprintf(err, errlen, "query is read-only: %s not allowed", refused_name(q->denied, buf));
			return -EPERM;
		}
		sql_error(err, errlen, sqlite3_errmsg(db));
		return -EINVAL;
	}
}

static void column_value(sqlite3_stmt *st, int i, struct cw_ro_value *v)
{
	memset(v, 0, sizeof(*v));
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		v->type = CW_RO_INT;
		v->i = sqlite3_column_int64(st, i);
		break;
	case SQLITE_FLOAT:
		v->type = CW_RO_REAL;
		v->d = sqlite3_column_double(st, i);
		break;
	case SQLITE_TEXT:
		v->type = CW_RO_TEXT;
		v->p = sqlite3_column_text(st, i);
		v->len = (size_t)sqlite3_column_bytes(st, i);
		break;
	case SQLITE_BLOB:
		v->type = CW_RO_BLOB;
		v->p = sqlite3_column_blob(st, i);
		v->len = (size_t)sqlite3_column_bytes(st, i);
		break;
	default:
		v->type = CW_RO_NULL;
	}
}

int cw_ro_exec(struct cw_ro_db *q, const char *sql, const struct cw_ro_value *params, int nparams,
	       const struct cw_ro_query_limits *limits, cw_ro_row_fn fn, void *arg,
	       struct cw_ro_query_info *info, char *err, size_t errlen)
{
	struct cw_ro_query_limits lim = { 0, 0 };
	struct cw_ro_query_info inf = { 0, 0, 0, 0 };
	struct cw_ro_value *vals = NULL;
	struct cw_ro_watch watch;
	const char **names = NULL;
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	uint64_t t0 = cw_monotonic_ns();
	int rc, ret = 0, ncols, i;

	if (limits)
		lim = *limits;
	if (!lim.timeout_ns)
		lim.timeout_ns = CW_RO_DEFAULT_TIMEOUT_NS;
	if (!lim.max_rows)
		lim.max_rows = CW_RO_DEFAULT_MAX_ROWS;
	inf.max_rows = lim.max_rows;
	q->denied[0] = '\0';
	q->timed_out = 0;
	q->deadline_ns = t0 + lim.timeout_ns;
	/* The progress handler stops most statements; the watchdog those
	 * busy inside one opcode (ro_guard.h), the heap bound those that
	 * would grow the process. */
	cw_ro_watch_arm(&watch, q->st->db, q->deadline_ns);
	cw_ro_heap_begin(CW_RO_MAX_HEAP_BYTES);
	if (!sql || !*skip_noise(sql)) {
		snprintf(err, errlen, "empty query");
		ret = -EINVAL;
		goto out;
	}
	rc = sqlite3_prepare_v2(q->st->db, sql, -1, &st, &tail);
	if (rc != SQLITE_OK) {
		ret = step_error(q, &lim, sql, rc, err, errlen);
		goto out;
	}
	if (!st) {
		snprintf(err, errlen, "empty query");
		ret = -EINVAL;
		goto out;
	}
	if (tail && *skip_noise(tail)) {
		snprintf(err, errlen, "only one statement is allowed; found more after the first \";\"");
		ret = -EINVAL;
		goto out;
	}
	/* VACUUM and friends have no authorizer action; SQLite still knows
	 * whether the statement would write. */
	if (!sqlite3_stmt_readonly(st)) {
		ret = step_error(q, &lim, sql, SQLITE_READONLY, err, errlen);
		goto out;
	}
	ret = bind_params(st, params, nparams, err, errlen);
	if (ret)
		goto out;
	ncols = sqlite3_column_count(st);
	names = calloc((size_t)ncols + 1, sizeof(*names));
	vals = calloc((size_t)ncols + 1, sizeof(*vals));
	if (!names || !vals) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		/* Names are read after the first step: binding a parameter that
		 * a partial index's WHERE compares with (op = ?1 against the
		 * events_* indexes) makes SQLite re-prepare the statement there,
		 * which frees the names read before. */
		if (inf.rows == 0)
			for (i = 0; i < ncols; i++) {
				names[i] = sqlite3_column_name(st, i);
				if (!names[i])
					names[i] = "?";
			}
		if (lim.max_rows >= 0 && inf.rows >= lim.max_rows) {
			inf.truncated = 1;
			break;
		}
		for (i = 0; i < ncols; i++)
			column_value(st, i, &vals[i]);
		if (fn && (ret = fn(arg, ncols, names, vals)))
			goto out;
		inf.rows++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = step_error(q, &lim, sql, rc, err, errlen);
out:
	inf.elapsed_ns = cw_monotonic_ns() - t0;
	if (info)
		*info = inf;
	free(names);
	free(vals);
	/* Disarmed first: an interrupt after the statement ended would
	 * stay pending on the connection. */
	cw_ro_watch_disarm(&watch);
	sqlite3_finalize(st);
	cw_ro_heap_end();
	return ret;
}

int cw_ro_query_run(const char *db_path, const char *sql, const struct cw_ro_value *params,
		    int nparams, const struct cw_ro_query_limits *lim, cw_ro_row_fn fn, void *arg,
		    struct cw_ro_query_info *info, char *err, size_t errlen)
{
	struct cw_ro_db *q;
	int rc;

	if (info)
		memset(info, 0, sizeof(*info));
	rc = cw_ro_open(&q, db_path, err, errlen);
	if (rc)
		return rc;
	rc = cw_ro_exec(q, sql, params, nparams, lim, fn, arg, info, err, errlen);
	cw_ro_close(q);
	return rc;
}

/* Collected results: every TEXT/BLOB is copied; the whole result is capped
 * on the bytes it takes once sent (hex, escapes, names), so that neither
 * what causeway holds nor what it sends passes the cap. */
#define COLLECT_MAX_BYTES CW_RO_MAX_RESULT_BYTES

struct collect_ctx {
	struct cw_ro_result *r;
	size_t alloc_rows;
	size_t bytes;
};

static int collect_row(void *arg, int ncols, const char *const *names, const struct cw_ro_value *vals)
{
	struct collect_ctx *c = arg;
	struct cw_ro_result *r = c->r;
	struct cw_ro_value *row;
	int i;

	if (!r->names) {
		r->names = calloc((size_t)ncols + 1, sizeof(*r->names));
		if (!r->names)
			return -ENOMEM;
		r->ncols = ncols;
		for (i = 0; i < ncols; i++)
			if (!(r->names[i] = strdup(names[i])))
				return -ENOMEM;
	}
	if ((size_t)r->nrows == c->alloc_rows) {
		size_t n = c->alloc_rows ? c->alloc_rows * 2 : 256;
		struct cw_ro_value *p = realloc(r->vals, n * (size_t)(ncols ? ncols : 1) * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->vals = p;
		c->alloc_rows = n;
	}
	row = &r->vals[(size_t)r->nrows * (size_t)ncols];
	for (i = 0; i < ncols; i++) {
		row[i] = vals[i];
		c->bytes += cw_ro_value_out_bytes(names[i], &vals[i]);
		if (c->bytes > COLLECT_MAX_BYTES) {
			for (; i < ncols; i++)
				row[i].type = CW_RO_NULL;
			r->nrows++;
			return -E2BIG;
		}
		if (vals[i].type == CW_RO_TEXT || vals[i].type == CW_RO_BLOB) {
			char *p;

			if (!(p = malloc(vals[i].len + 1))) {
				/* Keep the row consistent for free(): no pointer
				 * into SQLite memory may remain. */
				for (; i < ncols; i++)
					row[i].type = CW_RO_NULL;
				r->nrows++;
				return -ENOMEM;
			}
			memcpy(p, vals[i].p, vals[i].len);
			p[vals[i].len] = '\0';
			row[i].p = p;
		}
	}
	r->nrows++;
	return 0;
}

void cw_ro_result_free(struct cw_ro_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < (size_t)r->nrows * (size_t)r->ncols; i++)
		if (r->vals[i].type == CW_RO_TEXT || r->vals[i].type == CW_RO_BLOB)
			free((void *)r->vals[i].p);
	for (i = 0; r->names && i < (size_t)r->ncols; i++)
		free(r->names[i]);
	free(r->names);
	free(r->vals);
	free(r);
}

int cw_ro_result_names(struct cw_ro_db *q, const char *sql, struct cw_ro_result *r)
{
	/* A result with no rows still has column names (the text table prints
	 * its header); prepare again only to read them. */
	sqlite3_stmt *st = NULL;
	int i;

	if (sqlite3_prepare_v2(q->st->db, sql, -1, &st, NULL) != SQLITE_OK || !st)
		return 0;
	r->ncols = sqlite3_column_count(st);
	r->names = calloc((size_t)r->ncols + 1, sizeof(*r->names));
	for (i = 0; r->names && i < r->ncols; i++)
		r->names[i] = strdup(sqlite3_column_name(st, i) ? sqlite3_column_name(st, i) : "?");
	sqlite3_finalize(st);
	return r->names ? 0 : -ENOMEM;
}

void cw_ro_set_cancel(struct cw_ro_db *db, const atomic_int *flag)
{
	db->cancel = flag;
}

int cw_ro_query_collect(const char *db_path, const char *sql, const struct cw_ro_value *params,
			int nparams, const struct cw_ro_query_limits *lim,
			struct cw_ro_result **out, char *err, size_t errlen)
{
	return cw_ro_query_collect_cancel(db_path, sql, params, nparams, lim, NULL, out, err, errlen);
}

int cw_ro_query_collect_cancel(const char *db_path, const char *sql, const struct cw_ro_value *params,
			       int nparams, const struct cw_ro_query_limits *lim, const atomic_int *cancel,
			       struct cw_ro_result **out, char *err, size_t errlen)
{
	struct collect_ctx c = { NULL, 0, 0 };
	struct cw_ro_db *q;
	int rc;

	*out = NULL;
	c.r = calloc(1, sizeof(*c.r));
	if (!c.r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = cw_ro_open(&q, db_path, err, errlen);
	if (rc) {
		free(c.r);
		return rc;
	}
	cw_ro_set_cancel(q, cancel);
	if (errlen)
		err[0] = '\0';
	rc = cw_ro_exec(q, sql, params, nparams, lim, collect_row, &c, &c.r->info, err, errlen);
	if (rc == -E2BIG)
		snprintf(err, errlen, "result is larger than %zu MiB; select fewer columns or rows",
			 COLLECT_MAX_BYTES >> 20);
	else if (rc == -ENOMEM && errlen && !err[0]) /* from collect_row */
		snprintf(err, errlen, "out of memory");
	if (!rc && !c.r->names)
		rc = cw_ro_result_names(q, sql, c.r);
	cw_ro_close(q);
	if (rc) {
		cw_ro_result_free(c.r);
		return rc;
	}
	*out = c.r;
	return 0;
}
