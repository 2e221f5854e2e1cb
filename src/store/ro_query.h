/* User-supplied SQL over a causeway database, safely.
 *
 * Every path that runs SQL a user typed (query, the HTTPS API, MCP) goes
 * through here. The statement runs on its own connection that:
 *  - is opened SQLITE_OPEN_READONLY with PRAGMA query_only;
 *  - has an authorizer allowing only SELECT, column reads, functions,
 *    recursive CTEs and a whitelist of read-only PRAGMAs, so ATTACH, every
 *    write, DDL, VACUUM, transactions and setting PRAGMAs are refused at
 *    prepare time;
 *  - has load_extension and fts3_tokenizer disabled and
 *    SQLITE_DBCONFIG_DEFENSIVE on;
 *  - has SQLite's limits set and its costly functions bounded per call
 *    (ro_guard.h): a single value at most 16 MiB, printf widths, LIKE,
 *    instr, replace and trim costs, a heap bound per statement;
 *  - is interrupted by a progress handler and a watchdog at a wall-time
 *    limit;
 *  - returns at most a row cap, and says so when it truncated; collected
 *    results at most CW_RO_MAX_RESULT_BYTES as sent;
 *  - accepts exactly one statement, with values only through bound
 *    parameters (?, ?NNN, :name), never spliced into the text. */
#ifndef CW_STORE_RO_QUERY_H
#define CW_STORE_RO_QUERY_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CW_RO_DEFAULT_TIMEOUT_NS (10ULL * 1000000000ULL)
#define CW_RO_DEFAULT_MAX_ROWS 100000
#define CW_RO_MAX_VALUE_BYTES (16 << 20)
/* A collected result (cw_ro_query_collect) as it is sent: the sum of
 * cw_ro_value_out_bytes over its cells. */
#define CW_RO_MAX_RESULT_BYTES ((size_t)256 << 20)

struct cw_ro_query_limits {
	uint64_t timeout_ns; /* 0: CW_RO_DEFAULT_TIMEOUT_NS */
	int64_t max_rows;    /* 0: CW_RO_DEFAULT_MAX_ROWS; < 0: no cap */
};

enum cw_ro_type {
	CW_RO_NULL = 0,
	CW_RO_INT,
	CW_RO_REAL,
	CW_RO_TEXT,
	CW_RO_BLOB,
};

struct cw_ro_value {
	enum cw_ro_type type;
	int64_t i;
	double d;
	const void *p; /* TEXT (NUL-terminated) or BLOB bytes */
	size_t len;    /* bytes of TEXT or BLOB */
};

/* What a run did. */
struct cw_ro_query_info {
	int64_t rows;        /* rows delivered */
	int truncated;       /* 1 when more rows existed past max_rows */
	int64_t max_rows;    /* the cap that applied */
	uint64_t elapsed_ns;
};

/* Called once per row; names and vals have ncols entries and live until
 * the callback returns. A non-zero return stops the query and is returned
 * by the run. */
typedef int (*cw_ro_row_fn)(void *arg, int ncols, const char *const *names,
			    const struct cw_ro_value *vals);

struct cw_ro_db;

/* Opens path read-only through cw_store_open (same errors and sentences:
 * -ENOENT, -ENOTSUP, -EBUSY, -EPROTO, -EACCES, -EISDIR) and locks the
 * connection down as above. */
int cw_ro_open(struct cw_ro_db **out, const char *db_path, char *err, size_t errlen);
void cw_ro_close(struct cw_ro_db *db);

/* Runs one statement. params (may be NULL) bind to ?1..?nparams in order.
 * Returns 0 or -errno with one sentence in err:
 *   -EINVAL     bad SQL       "sql error: no such table: \"foo\""
 *               or several statements, empty text, parameter mismatch
 *   -EPERM      refused       "query is read-only: INSERT not allowed"
 *   -ETIMEDOUT  time limit    "query exceeded 10 s limit"
 *   -EBUSY/-ENOTSUP/-EIO      the database itself (locked, corrupt)
 *   other       what the row callback returned. */
int cw_ro_exec(struct cw_ro_db *db, const char *sql, const struct cw_ro_value *params, int nparams,
	       const struct cw_ro_query_limits *lim, cw_ro_row_fn fn, void *arg,
	       struct cw_ro_query_info *info, char *err, size_t errlen);

/* cw_ro_open + cw_ro_exec + cw_ro_close. */
int cw_ro_query_run(const char *db_path, const char *sql, const struct cw_ro_value *params,
		    int nparams, const struct cw_ro_query_limits *lim, cw_ro_row_fn fn, void *arg,
		    struct cw_ro_query_info *info, char *err, size_t errlen);

/* 1 when rc from cw_ro_open/cw_ro_query_run is about the database file
 * (missing, corrupt, locked, newer, permissions) rather than the SQL. */
int cw_ro_is_db_error(int rc);

/* Collected results, for callers that want them all at once (the API). */
struct cw_ro_result {
	int ncols;
	char **names;
	int64_t nrows;
	struct cw_ro_value *vals; /* nrows * ncols, row-major; own their bytes */
	struct cw_ro_query_info info;
};

int cw_ro_query_collect(const char *db_path, const char *sql, const struct cw_ro_value *params,
			int nparams, const struct cw_ro_query_limits *lim,
			struct cw_ro_result **out, char *err, size_t errlen);
void cw_ro_result_free(struct cw_ro_result *r);
/* The same, stopped early (-ECANCELED, "query cancelled") once *cancel
 * becomes non-zero: an MCP client's notifications/cancelled. */
int cw_ro_query_collect_cancel(const char *db_path, const char *sql, const struct cw_ro_value *params,
			       int nparams, const struct cw_ro_query_limits *lim, const atomic_int *cancel,
			       struct cw_ro_result **out, char *err, size_t errlen);
/* A result's column names when it has no rows (a text table still prints
 * its header): sql prepared again on q only to read them. 0 or -ENOMEM. */
int cw_ro_result_names(struct cw_ro_db *q, const char *sql, struct cw_ro_result *r);

/* A result as the JSON text the HTTPS API sends, built row by row
 * (ro_rows.c): text holds {"rows":[[cell, ...], ...] and the caller
 * closes the object (cw_ro_json_finish). The text is capped at cap bytes
 * (-E2BIG, "result is larger than N MiB") and, while the statement runs,
 * counted with SQLite's own memory against the statement's heap bound
 * (-ENOMEM, "query exceeded the 256 MiB memory limit"), so one query
 * holds at most that much, rows and answer together. */
struct cw_ro_json {
	char *text; /* malloc'd */
	size_t len, alloc, cap;
	int ncols;
	char **names;
	struct cw_ro_query_info info;
};
int cw_ro_query_json(const char *db_path, const char *sql, const struct cw_ro_value *params, int nparams,
		     const struct cw_ro_query_limits *lim, size_t cap, struct cw_ro_json *out, char *err,
		     size_t errlen);
/* Appends "]," and the members of meta (a JSON object) and closes the
 * object; the text is then the caller's (out->text, out->len). 0 or
 * -ENOMEM. */
int cw_ro_json_finish(struct cw_ro_json *out, json_t *meta);
void cw_ro_json_free(struct cw_ro_json *out);

/* Runs on db stop when *flag becomes non-zero (NULL: never). */
void cw_ro_set_cancel(struct cw_ro_db *db, const atomic_int *flag);

/* An upper bound on the bytes one cell (named name) takes in any output:
 * a JSON row object or array, the text table, CSV. The result cap
 * (CW_RO_MAX_RESULT_BYTES) counts these. */
size_t cw_ro_value_out_bytes(const char *name, const struct cw_ro_value *v);

/* A JSON value for one cell: integer, real (null for NaN/inf), string, or
 * for a BLOB its lower-case hex. */
json_t *cw_ro_value_json(const struct cw_ro_value *v);
/* A bound parameter from a JSON value (null, integer, real, string, or a
 * boolean as 0/1; strings point into v). Returns 0 or -EINVAL for arrays
 * and objects. */
int cw_ro_value_from_json(json_t *v, struct cw_ro_value *p);
/* The whole result as a JSON array of row objects. */
json_t *cw_ro_result_json(const struct cw_ro_result *r);

#endif
