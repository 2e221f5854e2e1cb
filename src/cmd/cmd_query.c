#define _GNU_SOURCE /* asprintf */
/* causeway query: the per-op summary, or one read-only SQL statement over
 * the store. The SQL runs through store/ro_query (authorizer, time limit,
 * row cap); this file is flags, errors and output. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/tenant_select.h"
#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "cmd/tenant_opts.h"
#include "cmd/fleet_cli.h"
#include "store/ro_query.h"
#include "store/store.h"
#include "analysis/summary.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/progress.h"
#include "util/strbuf.h"
#include "util/table.h"
#include "util/timeutil.h"

#define MAX_PARAMS 32
#define MAX_STDIN_SQL ((size_t)1 << 20)

enum fmt { FMT_TEXT, FMT_JSON, FMT_CSV };

static void usage(FILE *f)
{
	fputs("usage: causeway query [SQL] [--db PATH] [--since DURATION] [--json | --csv]\n"
	      "                      [--limit N] [--timeout DURATION] [--param VALUE]...\n"
	      "                      [--group-by-line] [--per-tenant]\n"
	      "                      [--cgroup PATH|ID] [--container ID] [--pod NAME|UID]\n"
	      "                      [--slurm-job ID] [--namespace NS]\n"
	      "\n"
	      "Without SQL, prints a per-source, per-op summary of the store: count,\n"
	      "p50, p95, p99, max, total time and share of wall time of the calls that\n"
	      "succeeded, and the calls that failed (a failure code of their API),\n"
	      "largest total first. With SQL (or \"-\" to read it from stdin), runs that\n"
	      "one statement read-only and prints its rows. Writes, ATTACH, DDL and\n"
	      "setting PRAGMAs are refused. Tables and columns: docs/schema.md.\n"
	      "\n"
	      "  -d, --db PATH       database (default causeway.db)\n"
	      "  --since DURATION    summary: the last DURATION before the newest data\n"
	      "  --group-by-line     summary: one row per op and Python source line\n"
	      "  --per-tenant        summary: one row per op and container, pod or job\n"
	      "summary tenant filters (the calls of these processes only):\n"
	      CW_TENANT_USAGE
	      "  --json              a JSON array of row objects\n"
	      "  --csv               RFC 4180 CSV with a header line\n"
	      "  --limit N           at most N rows (SQL default 100000; truncation is reported)\n"
	      "  --timeout DURATION  SQL: stop after DURATION (default 10s)\n"
	      "  --param VALUE       SQL: bind VALUE to the next ?N parameter (integers,\n"
	      "                      reals and NULL as such, anything else as text)\n"
	      "  --nodes HOST:PORT,...  ask these agents (`causeway serve`) instead of the\n"
	      "                      database; --fleet: the config's fleet.nodes (docs/fleet.md)\n"
	      "  --help              this text\n"
	      "\n"
	      "examples:\n"
	      "  causeway query --since 5m\n"
	      "  causeway query --json \"SELECT op, count(*) AS n FROM events GROUP BY op\"\n"
	      "  causeway query \"SELECT * FROM events WHERE pid = ?1 LIMIT 10\" --param 4242\n"
	      "  causeway query -d cluster.db \"SELECT node, count(*) FROM events GROUP BY node\"\n"
	      "  causeway query --nodes gpu-node-01:8443,gpu-node-02:8443 --since 5m\n",
	      f);
}

/* --param: typed by its spelling so that "pid = ?1" compares as integer. */
static void parse_param(const char *s, struct cw_ro_value *v)
{
	char *end;

	memset(v, 0, sizeof(*v));
	if (!strcmp(s, "NULL")) {
		v->type = CW_RO_NULL;
		return;
	}
	errno = 0;
	v->i = strtoll(s, &end, 10);
	if (*s && !*end && !errno) {
		v->type = CW_RO_INT;
		return;
	}
	v->d = strtod(s, &end);
	if (*s && !*end && !errno) {
		v->type = CW_RO_REAL;
		return;
	}
	v->type = CW_RO_TEXT;
	v->p = s;
	v->len = strlen(s);
}

static int parse_limit(const char *s, int64_t *out)
{
	uint64_t v;
	int rc = cw_parse_uint(s, 1, 1000000000ULL, &v);

	if (!rc)
		*out = (int64_t)v;
	return rc;
}

static char *read_stdin_sql(void)
{
	struct strbuf sb;
	char buf[4096];
	size_t n;

	strbuf_init(&sb, MAX_STDIN_SQL);
	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
		if (strbuf_add(&sb, buf, n)) {
			strbuf_release(&sb);
			return NULL;
		}
	return strbuf_detach(&sb);
}

/* ---- SQL results ---- */

/* Text of one cell for the table and CSV: SQLite's own spelling of reals
 * ("6.0", not "6"), blobs as hex, NULL as "NULL" (empty in CSV). */
static char *cell_text(const struct cw_ro_value *v, int csv)
{
	char *s = NULL;

	switch (v->type) {
	case CW_RO_INT:
		if (asprintf(&s, "%" PRId64, v->i) < 0)
			s = NULL;
		return s;
	case CW_RO_REAL: {
		char *m = sqlite3_mprintf("%!.15g", v->d);

		s = m ? strdup(m) : NULL;
		sqlite3_free(m);
		return s;
	}
	case CW_RO_TEXT:
		return strndup(v->p, v->len);
	case CW_RO_BLOB: {
		json_t *j = cw_ro_value_json(v);

		s = j && json_string_value(j) ? strdup(json_string_value(j)) : NULL;
		json_decref(j);
		return s;
	}
	default:
		return strdup(csv ? "" : "NULL");
	}
}

/* The aligned table pads every row to the widest cell of each column: one
 * wide cell over many rows would print far more than the result holds.
 * -E2BIG when the table could pass the result cap. */
static int table_fits(const struct cw_ro_result *r)
{
	size_t line = 1, w, c, i;

	for (c = 0; c < (size_t)r->ncols; c++) {
		size_t widest = strlen(r->names[c]);

		for (i = 0; i < (size_t)r->nrows; i++) {
			w = cw_ro_value_out_bytes("", &r->vals[i * (size_t)r->ncols + c]);
			if (w > widest)
				widest = w;
		}
		line += widest + 2;
	}
	return line > CW_RO_MAX_RESULT_BYTES / ((size_t)r->nrows + 1) ? -E2BIG : 0;
}

static int print_sql_result(const struct cw_ro_result *r, enum fmt fmt)
{
	struct cw_table *t;
	int64_t i;
	int c, rc = 0;

	if (fmt == FMT_TEXT && (rc = table_fits(r)))
		return rc;

	if (fmt == FMT_JSON) {
		json_t *a = cw_ro_result_json(r);

		if (!a || json_dumpf(a, stdout, JSON_INDENT(2)))
			rc = -ENOMEM;
		else
			fputc('\n', stdout);
		json_decref(a);
		return rc;
	}
	t = cw_table_new(r->ncols ? r->ncols : 1);
	if (!t)
		return -ENOMEM;
	for (c = 0; c < r->ncols; c++) {
		enum cw_align al = CW_ALIGN_LEFT;

		/* Numbers right-aligned: a column is numeric when its first
		 * non-NULL value is. */
		for (i = 0; i < r->nrows; i++) {
			const struct cw_ro_value *v = &r->vals[(size_t)i * (size_t)r->ncols + (size_t)c];

			if (v->type == CW_RO_NULL)
				continue;
			if (v->type == CW_RO_INT || v->type == CW_RO_REAL)
				al = CW_ALIGN_RIGHT;
			break;
		}
		cw_table_header(t, c, r->names[c], al);
	}
	for (i = 0; i < r->nrows && !rc; i++) {
		rc = cw_table_row(t);
		for (c = 0; c < r->ncols && !rc; c++) {
			char *s = cell_text(&r->vals[(size_t)i * (size_t)r->ncols + (size_t)c], fmt == FMT_CSV);

			rc = s ? cw_table_set(t, c, s) : -ENOMEM;
			free(s);
		}
	}
	if (!rc)
		rc = fmt == FMT_CSV ? cw_table_print_csv(t, stdout) : cw_table_print(t, stdout);
	cw_table_free(t);
	return rc;
}

static void report_truncation(const struct cw_ro_query_info *info, enum fmt fmt)
{
	if (fmt == FMT_TEXT) {
		if (info->truncated)
			printf("(%" PRId64 " rows; truncated at the limit of %" PRId64 ", raise it with --limit)\n",
			       info->rows, info->max_rows);
		else
			printf("(%" PRId64 " row%s)\n", info->rows, info->rows == 1 ? "" : "s");
	} else if (info->truncated) {
		/* JSON and CSV stay parseable; the notice goes to stderr. */
		cw_warn("query: output truncated at the limit of %" PRId64 " rows; raise it with --limit",
			info->max_rows);
	}
}

static int run_sql(const char *db_path, const char *sql, const struct cw_ro_value *params, int nparams,
		   const struct cw_ro_query_limits *lim, enum fmt fmt)
{
	struct cw_ro_result *r = NULL;
	struct cw_progress pg;
	char err[1024];
	int rc;

	cw_progress_start(&pg, "query", "running the statement", fmt == FMT_JSON);
	rc = cw_ro_query_collect(db_path, sql, params, nparams, lim, &r, err, sizeof(err));
	cw_progress_end(&pg);
	if (rc) {
		cw_report_error(fmt == FMT_JSON, "%s", err);
		return cw_ro_is_db_error(rc) ? CW_EXIT_DB : CW_EXIT_FAIL;
	}
	cw_warn_losses(db_path, NULL);
	rc = print_sql_result(r, fmt);
	if (!rc)
		report_truncation(&r->info, fmt);
	cw_ro_result_free(r);
	if (rc == -E2BIG) {
		cw_report_error(0, "query: the result as an aligned table would be larger than %zu MiB; "
				"use --json or --csv, or select fewer rows", CW_RO_MAX_RESULT_BYTES >> 20);
		return CW_EXIT_FAIL;
	}
	if (rc) {
		cw_report_error(fmt == FMT_JSON, "query: cannot print the result: %s", cw_store_strerror(rc));
		return CW_EXIT_FAIL;
	}
	return CW_EXIT_OK;
}

/* ---- summary ---- */

/* The columns after source and op (and the location and tenant): the JSON
 * row's keys in CSV, short forms in text. */
static const char *summary_cols[] = { "source", "op", "count", "p50_ns", "p95_ns", "p99_ns", "max_ns",
				      "total_ns", "wall_share", "failed" };

static char *location(const struct cw_summary_row *r)
{
	char *s;

	if (!r->file)
		return strdup("-");
	if (asprintf(&s, "%s:%" PRId64 " %s", r->file, r->line, r->function ? r->function : "?") < 0)
		return NULL;
	return s;
}

static int print_summary_table(const struct cw_summary *s, size_t n, int by_line, int per_tenant, enum fmt fmt)
{
	static const char *const text_cols[] = { "source", "op", "count", "p50", "p95", "p99", "max", "total",
						 "wall%", "failed" };
	int tcol = by_line ? 3 : 2, base = tcol + (per_tenant ? 1 : 0), c, rc = 0;
	struct cw_table *t = cw_table_new(base + 8);
	size_t i;

	if (!t)
		return -ENOMEM;
	cw_table_header(t, 0, "source", CW_ALIGN_LEFT);
	cw_table_header(t, 1, "op", CW_ALIGN_LEFT);
	if (by_line)
		cw_table_header(t, 2, fmt == FMT_CSV ? "location" : "python location", CW_ALIGN_LEFT);
	if (per_tenant)
		cw_table_header(t, tcol, "tenant", CW_ALIGN_LEFT);
	for (c = 2; c < 10; c++)
		cw_table_header(t, base + c - 2, fmt == FMT_CSV ? summary_cols[c] : text_cols[c], CW_ALIGN_RIGHT);
	for (i = 0; i < n && !rc; i++) {
		const struct cw_summary_row *r = &s->rows[i];
		uint64_t v[5] = { r->p50_ns, r->p95_ns, r->p99_ns, r->max_ns, r->total_ns };
		char buf[32];
		int k;

		rc = cw_table_row(t);
		if (rc)
			break;
		cw_table_set(t, 0, r->source);
		cw_table_set(t, 1, r->op);
		if (by_line) {
			char *loc = location(r);

			cw_table_set(t, 2, loc);
			free(loc);
		}
		if (per_tenant)
			cw_table_set(t, tcol, r->tenant ? r->tenant : "-");
		cw_table_setf(t, base, "%" PRIu64, r->count);
		for (k = 0; k < 5; k++) {
			if (fmt == FMT_CSV) {
				cw_table_setf(t, base + 1 + k, "%" PRIu64, v[k]);
			} else {
				cw_format_duration(v[k], buf, sizeof(buf));
				cw_table_set(t, base + 1 + k, buf);
			}
		}
		if (fmt == FMT_CSV)
			cw_table_setf(t, base + 6, "%.6f", r->wall_share);
		else
			cw_table_setf(t, base + 6, "%.1f%%", r->wall_share * 100.0);
		/* Failing calls are counted apart from count and every latency
		 * column (docs/rules.md "Failing calls"). */
		cw_table_setf(t, base + 7, "%" PRIu64, r->failed);
	}
	if (!rc)
		rc = fmt == FMT_CSV ? cw_table_print_csv(t, stdout) : cw_table_print(t, stdout);
	cw_table_free(t);
	return rc;
}

static int run_summary(const char *db_path, int by_line, int per_tenant, struct cw_scope *sc, int64_t limit,
		       enum fmt fmt)
{
	/* since is the summary's own: the last DURATION before its newest
	 * aggregate second (analysis/summary.c). */
	struct cw_summary_opts o = { .since_ns = sc->since_ns, .by_line = by_line, .per_tenant = per_tenant };
	struct cw_summary *s = NULL;
	struct cw_store *st = NULL;
	char err[512];
	size_t n, i;
	int rc;

	rc = cw_store_open(&st, db_path, CW_STORE_READONLY, err, sizeof(err));
	if (!rc)
		cw_warn_losses(db_path, st->db);
	if (rc) {
		cw_report_error(fmt == FMT_JSON, "%s", err);
		return CW_EXIT_DB;
	}
	if (!(rc = cw_scope_select(st->db, sc))) {
		o.pids = sc->pids;
		o.npids = sc->npids;
	}
	if (!rc) {
		struct cw_progress pg;

		cw_progress_start(&pg, "query", "summarising the store", fmt == FMT_JSON);
		rc = cw_summary_build(st->db, &o, &s);
		cw_progress_end(&pg);
	}
	cw_scope_release(sc);
	cw_store_close(st);
	if (rc) {
		cw_report_error(fmt == FMT_JSON, "query: cannot read the summary from \"%s\": %s", db_path,
				rc == -EINVAL ? "malformed aggregate row" : cw_store_strerror(rc));
		return rc == -EINVAL || rc == -ENOMEM ? CW_EXIT_FAIL : CW_EXIT_DB;
	}
	n = limit > 0 && (size_t)limit < s->n ? (size_t)limit : s->n;
	if (fmt == FMT_JSON) {
		json_t *a = json_array();

		for (i = 0; a && i < n; i++)
			json_array_append_new(a, cw_summary_row_json(&s->rows[i], by_line));
		rc = !a || json_dumpf(a, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) ? -ENOMEM : 0;
		if (!rc)
			fputc('\n', stdout);
		json_decref(a);
	} else {
		if (fmt == FMT_TEXT && s->window_ns) {
			char from[48], to[48];

			cw_format_time((uint64_t)s->from_second * NSEC_PER_SEC, from, sizeof(from));
			cw_format_time((uint64_t)(s->to_second + 1) * NSEC_PER_SEC, to, sizeof(to));
			printf("window %s .. %s (%" PRIu64 " s)\n\n", from, to, (uint64_t)(s->window_ns / NSEC_PER_SEC));
		}
		rc = print_summary_table(s, n, by_line, per_tenant, fmt);
		if (!rc && fmt == FMT_TEXT) {
			if (n < s->n)
				printf("(%zu of %zu rows; raise --limit for more)\n", n, s->n);
			else
				printf("(%zu row%s)\n", n, n == 1 ? "" : "s");
		}
	}
	cw_summary_free(s);
	if (rc) {
		cw_report_error(fmt == FMT_JSON, "query: cannot print the summary: %s", cw_store_strerror(rc));
		return CW_EXIT_FAIL;
	}
	return CW_EXIT_OK;
}

/* Fleet fan-out (src/cmd/fleet_cli.c): rows from every agent, with a
 * leading node column, go through the same printer. */
static int fleet_print(const struct cw_ro_result *r, int f)
{
	return print_sql_result(r, f == 1 ? FMT_JSON : f == 2 ? FMT_CSV : FMT_TEXT);
}

int cmd_query(int argc, char **argv)
{
	enum { OPT_CSV = 256, OPT_TIMEOUT, OPT_PARAM, OPT_BY_LINE, OPT_PER_TENANT, OPT_TENANT };
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "since", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "limit", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "param", required_argument, NULL, OPT_PARAM },
		{ "group-by-line", no_argument, NULL, OPT_BY_LINE },
		{ "per-tenant", no_argument, NULL, OPT_PER_TENANT },
		CW_TENANT_LONGOPTS(OPT_TENANT),
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db_path = cw_default_db(), *limit_s = NULL, *timeout_s = NULL;
	struct cw_ro_query_limits lim = { 0, 0 };
	struct cw_ro_value params[MAX_PARAMS];
	int json = 0, csv = 0, by_line = 0, per_tenant = 0, nparams = 0, c, i, rc, li;
	struct cw_scope tf = { .names = CW_SCOPE_FLAGS };
	char err[512];
	int64_t limit = 0;
	char *sql = NULL;
	enum fmt fmt;

	if (cw_fleet_cli_wanted(argc, argv))
		return cw_fleet_cmd_query(argc, argv, fleet_print);

	/* --json must be known before the first error is reported. */
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, ":d:", longopts, &li)) != -1) {
		switch (c) {
		case 'd':
			db_path = optarg;
			break;
		case 's':
			tf.since = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case OPT_CSV:
			csv = 1;
			break;
		case 'n':
			limit_s = optarg;
			break;
		case OPT_TIMEOUT:
			timeout_s = optarg;
			break;
		case OPT_PARAM:
			if (nparams == MAX_PARAMS) {
				cw_report_error(json, "query: at most %d --param values", MAX_PARAMS);
				return CW_EXIT_USAGE;
			}
			parse_param(optarg, &params[nparams++]);
			break;
		case OPT_BY_LINE:
			by_line = 1;
			break;
		case OPT_PER_TENANT:
			per_tenant = 1;
			break;
		case OPT_TENANT:
			if (cw_scope_opt(&tf, longopts, li, optarg, json, "query"))
				return CW_EXIT_USAGE;
			break;
		case 'h':
			usage(stdout);
			return CW_EXIT_OK;
		default:
			return cw_opt_error(json, "query", c, argv);
		}
	}
	if (optind < argc - 1) {
		cw_report_error(json, "query: unexpected argument \"%s\" (quote the SQL as one argument)",
				argv[optind + 1]);
		return CW_EXIT_USAGE;
	}
	if (json && csv) {
		cw_report_error(json, "query: --json and --csv cannot be combined");
		return CW_EXIT_USAGE;
	}
	fmt = json ? FMT_JSON : csv ? FMT_CSV : FMT_TEXT;
	if (limit_s && parse_limit(limit_s, &limit) < 0) {
		char shown[CW_SHOWN_BUF];

		cw_report_error(json, "query: invalid --limit \"%s\" (1 to 1000000000)",
				cw_shown(limit_s, shown));
		return CW_EXIT_USAGE;
	}
	if (cw_scope_parse(&tf, err, sizeof(err))) {
		cw_report_error(json, "query: %s", err);
		return CW_EXIT_USAGE;
	}
	if (timeout_s && (cw_parse_duration(timeout_s, &lim.timeout_ns) < 0 || lim.timeout_ns == 0)) {
		char shown[CW_SHOWN_BUF];

		cw_report_error(json, "query: invalid duration \"%s\" (e.g. 500ms, 10s, 1m)",
				cw_shown(timeout_s, shown));
		return CW_EXIT_USAGE;
	}
	if (optind == argc) {
		if (timeout_s || nparams) {
			cw_report_error(json, "query: %s applies to SQL only", timeout_s ? "--timeout" : "--param");
			return CW_EXIT_USAGE;
		}
		return run_summary(db_path, by_line, per_tenant, &tf, limit, fmt);
	}
	if (tf.since || by_line || per_tenant || tf.ntf) {
		cw_report_error(json, "query: %s applies to the summary only; filter SQL with a WHERE clause",
				tf.since ? "--since" : by_line ? "--group-by-line" : per_tenant ? "--per-tenant" : cw_tenant_filter_flag(&tf.tf[0]));
		return CW_EXIT_USAGE;
	}
	if (!strcmp(argv[optind], "-")) {
		sql = read_stdin_sql();
		if (!sql) {
			cw_report_error(json, "query: SQL on stdin is longer than %zu bytes", MAX_STDIN_SQL);
			return CW_EXIT_USAGE;
		}
	}
	lim.max_rows = limit;
	rc = run_sql(db_path, sql ? sql : argv[optind], params, nparams, &lim, fmt);
	free(sql);
	return rc;
}
