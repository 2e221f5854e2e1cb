/* causeway explain: causal chains for the slow calls in a store. The
 * engine is src/analysis/explain.c; this file is flags, errors and output. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "analysis/explain_match.h"
#include "analysis/tenant_select.h"
#include "cmd/tenant_opts.h"
#include "cmd/cmd.h"
#include "cmd/fleet_cli.h"
#include "cmd/opt_error.h"
#include "store/read_error.h"
#include "store/store.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/progress.h"
#include "util/table.h"
#include "util/timeutil.h"
#include "util/utf8.h"

static void usage(FILE *f)
{
	fputs("usage: causeway explain [--db PATH] [--since DURATION | --from TIME --to TIME]\n"
	      "                        [--pid PID] [--per-process] [--stacks] [--json] [--no-store]\n"
	      "                        [--cgroup PATH|ID] [--container ID] [--pod NAME|UID]\n"
	      "                        [--slurm-job ID] [--namespace NS] [--per-tenant]\n"
	      "                        [--ranks] [--hang-after DURATION] [--stall-after DURATION]\n"
	      "                        [--now TIME]\n"
	      "\n"
	      "Finds the ops with a latency tail, measures for each slow call what its\n"
	      "thread was doing (preempted, blocked on I/O, under memory pressure, ...)\n"
	      "and prints one causal chain per cause, most severe first. Chains are\n"
	      "appended to the store's history unless --no-store is given.\n"
	      "\n"
	      "  -d, --db PATH     database (default causeway.db)\n"
	      "  --since DURATION  the last DURATION before the newest data (5m, 1h, 30s)\n"
	      "  --from TIME       window start: RFC 3339 or Unix seconds\n"
	      "  --to TIME         window end: RFC 3339 or Unix seconds\n"
	      "  --pid PID         only this process (its own percentiles and slow calls)\n"
	      "  --per-process     one chain per process instead of per op, each judged by\n"
	      "                    its own percentiles\n"
	      CW_TENANT_USAGE
	      "  --per-tenant      chains per process, grouped by container, pod or job\n"
	      "  --ranks           a table of the ranks calling NCCL collectives: arrival lag,\n"
	      "                    last sequence number, share of time waiting (\"ranks\" in --json)\n"
	      "  --hang-after DURATION  floor of the nccl_hang threshold (default 10s; the\n"
	      "                    threshold is max(20 x the median step, this))\n"
	      "  --stall-after DURATION  floor of the training_stall threshold (default 30s;\n"
	      "                    the threshold is max(10 x the process's step, this))\n"
	      "  --stacks          print each chain's stack: native frames with the Python\n"
	      "                    frames spliced in (always in --json)\n"
	      "  --json            one JSON object (see docs/explain.md)\n"
	      "  --no-store        do not append the chains to the chains table\n"
	      "  --now TIME        the creation time recorded with stored chains (default:\n"
	      "                    the clock): RFC 3339 or Unix seconds\n"
	      "  --nodes HOST:PORT,...  ask these agents (`causeway serve`) instead of the\n"
	      "                    database; --fleet: the config's fleet.nodes (docs/fleet.md)\n"
	      "  --help            this text\n"
	      "\n"
	      "examples:\n"
	      "  causeway explain --db causeway-demo.db\n"
	      "  causeway explain -d cluster.db --since 5m\n"
	      "  causeway explain --per-process --stacks --json\n"
	      "  causeway explain --nodes gpu-node-01:8443,gpu-node-02:8443\n",
	      f);
}

static int parse_pid(const char *s, int64_t *out)
{
	uint64_t v;
	int rc = cw_parse_uint(s, 1, CW_PID_MAX, &v);

	if (!rc)
		*out = (int64_t)v;
	return rc;
}

/* explain --ranks as text: one line per rank. */
static void print_ranks(json_t *rows)
{
	struct cw_table *t = cw_table_new(9);
	static const char *const h[] = { "rank", "node", "pid", "collectives", "late", "mean lag", "last seq",
					 "comm wait", "" };
	size_t i;
	json_t *r;

	if (!t)
		return;
	for (int k = 0; k < 9; k++)
		cw_table_header(t, k, h[k], k >= 2 && k < 8 ? CW_ALIGN_RIGHT : CW_ALIGN_LEFT);
	json_array_foreach(rows, i, r) {
		char lag[32];
		json_t *rk = json_object_get(r, "rank");

		cw_format_duration((uint64_t)json_integer_value(json_object_get(r, "mean_lag_ns")), lag, sizeof(lag));
		cw_table_row(t);
		if (json_is_integer(rk))
			cw_table_setf(t, 0, "%lld", (long long)json_integer_value(rk));
		else
			cw_table_set(t, 0, "?");
		cw_table_set(t, 1, json_string_value(json_object_get(r, "node")));
		cw_table_setf(t, 2, "%lld", (long long)json_integer_value(json_object_get(r, "pid")));
		cw_table_setf(t, 3, "%lld", (long long)json_integer_value(json_object_get(r, "collectives")));
		cw_table_setf(t, 4, "%lld", (long long)json_integer_value(json_object_get(r, "late")));
		cw_table_set(t, 5, lag);
		cw_table_setf(t, 6, "%lld", (long long)json_integer_value(json_object_get(r, "last_seq")));
		cw_table_setf(t, 7, "%.0f %%", 100 * json_real_value(json_object_get(r, "comm_wait_share")));
		cw_table_set(t, 8, json_is_true(json_object_get(r, "straggler"))  ? "straggler"
				   : json_is_true(json_object_get(r, "missing")) ? "missing"
										 : "");
	}
	printf("\nranks (NCCL collectives)\n");
	if (!json_array_size(rows))
		printf("  no NCCL collectives recorded in the window\n");
	else
		cw_table_print(t, stdout);
	cw_table_free(t);
}

/* The report goes through a buffer so that the names in it (comm, kernel
 * and file names: bytes from the traced workload) reach the terminal as
 * valid UTF-8, U+FFFD where they were not. */
static void print_text(const struct cw_explain_result *r, int stacks)
{
	char *buf = NULL, *fixed;
	size_t len = 0, n;
	FILE *m = open_memstream(&buf, &len);

	if (!m) {
		cw_explain_print_text_stacks(stdout, r, isatty(STDOUT_FILENO), stacks);
		return;
	}
	cw_explain_print_text_stacks(m, r, isatty(STDOUT_FILENO), stacks);
	fclose(m);
	fixed = cw_utf8_fix(buf, len, &n);
	fwrite(fixed ? fixed : buf, 1, fixed ? n : len, stdout);
	free(fixed);
	free(buf);
}

int cmd_explain(int argc, char **argv)
{
	enum { OPT_NO_STORE = 256, OPT_PER_PROCESS, OPT_FROM, OPT_TO, OPT_STACKS, OPT_PER_TENANT, OPT_TENANT,
	       OPT_RANKS, OPT_HANG_AFTER, OPT_STALL_AFTER, OPT_NOW };
	static const struct option longopts[] = {
		{"db", required_argument, NULL, 'd'},    {"since", required_argument, NULL, 's'},
		{"from", required_argument, NULL, OPT_FROM}, {"to", required_argument, NULL, OPT_TO},
		{"pid", required_argument, NULL, 'p'},   {"per-process", no_argument, NULL, OPT_PER_PROCESS},
		{"json", no_argument, NULL, 'j'},        {"no-store", no_argument, NULL, OPT_NO_STORE},
		{"stacks", no_argument, NULL, OPT_STACKS}, {"per-tenant", no_argument, NULL, OPT_PER_TENANT},
		CW_TENANT_LONGOPTS(OPT_TENANT),
		{"ranks", no_argument, NULL, OPT_RANKS}, {"hang-after", required_argument, NULL, OPT_HANG_AFTER},
		{"stall-after", required_argument, NULL, OPT_STALL_AFTER},
		{"now", required_argument, NULL, OPT_NOW},
		{"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	const char *db_path = cw_default_db(), *pid_s = NULL, *hang = NULL, *stall = NULL, *now_s = NULL;
	struct cw_explain_opts o = {.store_chains = 1};
	struct cw_explain_result r;
	struct cw_store *st = NULL;
	json_t *rank_rows = NULL;
	uint64_t now = 0;
	char err[512], unmatched[256];
	int json = 0, stacks = 0, ranks = 0, c, ret, rc = CW_EXIT_OK, li;
	struct cw_scope sc = { .names = CW_SCOPE_FLAGS };
	struct cw_progress pg = { .fd = -1 };

	/* Fleet fan-out (src/cmd/fleet_cli.c): chains from every agent. */
	if (cw_fleet_cli_wanted(argc, argv))
		return cw_fleet_cmd_explain(argc, argv);

	/* --json must be known before the first error is reported. */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, "+:d:", longopts, &li)) != -1) {
		switch (c) {
		case 'd':
			db_path = optarg;
			break;
		case 's':
			sc.since = optarg;
			break;
		case OPT_FROM:
			sc.from = optarg;
			break;
		case OPT_TO:
			sc.to = optarg;
			break;
		case 'p':
			pid_s = optarg;
			break;
		case OPT_PER_PROCESS:
			o.per_process = 1;
			break;
		case 'j':
			json = 1;
			break;
		case OPT_NO_STORE:
			o.store_chains = 0;
			break;
		case OPT_STACKS:
			stacks = 1;
			break;
		case OPT_PER_TENANT:
			o.per_tenant = 1;
			break;
		case OPT_TENANT:
			if (cw_scope_opt(&sc, longopts, li, optarg, json, "explain"))
				return CW_EXIT_USAGE;
			break;
		case OPT_RANKS:
			ranks = 1;
			break;
		case OPT_HANG_AFTER:
			hang = optarg;
			break;
		case OPT_STALL_AFTER:
			stall = optarg;
			break;
		case OPT_NOW:
			now_s = optarg;
			break;
		case 'h':
			usage(stdout);
			return CW_EXIT_OK;
		default:
			return cw_opt_error(json, "explain", c, argv);
		}
	}
	if (optind < argc)
		return cw_opt_unexpected(json, "explain", argv[optind]);
	if (cw_scope_parse(&sc, err, sizeof(err))) {
		cw_report_error(json, "explain: %s", err);
		return CW_EXIT_USAGE;
	}
	if (now_s && cw_parse_time(now_s, &now) < 0) {
		cw_report_error(json, "explain: invalid time \"%s\" (RFC 3339 or Unix seconds)", now_s);
		return CW_EXIT_USAGE;
	}
	if (hang && (cw_parse_duration(hang, &o.hang_min_ns) < 0 || o.hang_min_ns == 0)) {
		cw_report_error(json, "explain: invalid duration \"%s\" (e.g. 30s, 5m, 2h)", hang);
		return CW_EXIT_USAGE;
	}
	if (stall && (cw_parse_duration(stall, &o.stall_min_ns) < 0 || o.stall_min_ns == 0)) {
		cw_report_error(json, "explain: invalid duration \"%s\" (e.g. 30s, 5m, 2h)", stall);
		return CW_EXIT_USAGE;
	}
	if (pid_s && parse_pid(pid_s, &o.pid) < 0) {
		char shown[CW_SHOWN_BUF];

		cw_report_error(json, "explain: invalid pid \"%s\" (1 to %d)", cw_shown(pid_s, shown),
				CW_PID_MAX);
		return CW_EXIT_USAGE;
	}
	o.node_filter = cw_global_node;

	/* Read-write so chains can be appended; read-only with --no-store so
	 * a read-only file can still be explained. */
	ret = cw_store_open(&st, db_path, o.store_chains ? CW_STORE_READWRITE : CW_STORE_READONLY, err,
			    sizeof(err));
	if (o.store_chains && (ret == -EROFS || ret == -EACCES || ret == -ENOSPC || ret == -EXDEV)) {
		/* A file this user cannot write (a read-only filesystem, another
		 * user's store, a full disk) can still be explained. */
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		ret = cw_store_open(&st, db_path, CW_STORE_READONLY, err, sizeof(err));
		if (ret == 0) {
			o.store_chains = 0;
			cw_warn("%s; chains are not stored", why);
		}
	}
	if (ret < 0) {
		cw_report_error(json, "%s", err);
		return CW_EXIT_DB;
	}
	cw_progress_start(&pg, "explain", "analysing the store", json);
	if ((ret = cw_scope_window(st->db, &sc, 0)) < 0 || (ret = cw_scope_select(st->db, &sc)) < 0)
		goto db_fail;
	o.from_wall_ns = sc.from_ns;
	o.to_wall_ns = sc.to_ns;
	o.pids = sc.pids;
	o.npids = sc.npids;
	ret = cw_explain_run(st->db, &o, &r);
	cw_progress_end(&pg);
	o.pids = NULL;
	cw_scope_release(&sc);
	if (ret < 0)
		goto db_fail;
	if ((ret = cw_explain_unmatched(st->db, &o, &r, unmatched, sizeof(unmatched))) != 0) {
		cw_explain_result_free(&r);
		if (ret < 0)
			goto db_fail;
		/* Not "no problems found": there was nothing to look at. */
		cw_report_error(json, "explain: nothing matches: %s", unmatched);
		cw_store_close(st);
		return CW_EXIT_NOMATCH;
	}
	if (ranks && !(rank_rows = cw_nccl_ranks_json(st->db, &o, r.from_wall_ns, r.to_wall_ns))) {
		cw_explain_result_free(&r);
		ret = -EIO;
		goto db_fail;
	}
	if (json) {
		json_t *j = cw_explain_to_json(&r);
		char *s;

		if (j && rank_rows)
			json_object_set(j, "ranks", rank_rows);
		s = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
		json_decref(j);
		if (!s) {
			cw_explain_result_free(&r);
			cw_store_close(st);
			cw_report_error(json, "explain: out of memory");
			return CW_EXIT_FAIL;
		}
		puts(s);
		free(s);
	} else {
		print_text(&r, stacks);
		if (rank_rows)
			print_ranks(rank_rows);
	}
	json_decref(rank_rows);
	if (o.store_chains) {
		ret = cw_explain_store_chains(st->db, &r, now_s ? now : cw_realtime_ns());
		if (ret < 0) {
			cw_err("explain: could not store chains in \"%s\": %s", db_path, cw_store_strerror(ret));
			rc = CW_EXIT_DB;
		}
	}
	cw_explain_result_free(&r);
	cw_store_close(st);
	fflush(stdout);
	return rc;
db_fail:
	cw_progress_end(&pg);
	cw_scope_release(&sc);
	cw_report_error(json, "explain: cannot read \"%s\": %s", db_path,
			cw_store_read_strerror(st ? st->db : NULL, ret, err, sizeof(err)));
	cw_store_close(st);
	return CW_EXIT_DB;
}
