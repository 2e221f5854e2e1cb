/* causeway export: a store as Chrome trace JSON for ui.perfetto.dev. The
 * work is in src/export/perfetto.c; this file is flags, the output file
 * and errors. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/tenant_select.h"
#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "cmd/tenant_opts.h"
#include "export/perfetto.h"
#include "export/perfetto_fleet.h"
#include "cmd/fleet_cli.h"
#include "store/store.h"
#include "util/atomic_file.h"
#include "util/log.h"
#include "util/term.h"
#include "util/parse.h"
#include "util/progress.h"
#include "util/timeutil.h"

static void usage(FILE *f)
{
	fputs("usage: causeway export [--format perfetto] [-o FILE] [--db PATH]\n"
	      "                       [--since DURATION | --from TIME --to TIME] [--max-events N]\n"
	      "                       [--no-skew] [--no-chains] [--json]\n"
	      "                       [--cgroup PATH|ID] [--container ID] [--pod NAME|UID]\n"
	      "                       [--slurm-job ID] [--namespace NS]\n"
	      "\n"
	      "Writes the trace as Chrome trace JSON, the format ui.perfetto.dev and\n"
	      "chrome://tracing open: a process per node, a track per thread, CUDA,\n"
	      "driver and NCCL calls as slices, off-CPU intervals and block I/O on the\n"
	      "thread they happened to, causal chains as markers with flow arrows from\n"
	      "cause to effect, and counters from the system snapshots. A merged\n"
	      "database's clock offsets (see 'causeway merge') are applied.\n"
	      "\n"
	      "  --format perfetto  the output format (the only one; also \"chrome\")\n"
	      "  -o, --output FILE  write to FILE (atomically; a device or FIFO in place;\n"
	      "                     never the database itself); default standard output\n"
	      "  -d, --db PATH      database (default causeway.db)\n"
	      "  --since DURATION   the last DURATION of data (default: the whole store)\n"
	      "  --from TIME        window start: RFC 3339 or Unix seconds\n"
	      "  --to TIME          window end: RFC 3339 or Unix seconds\n"
	      "  --max-events N     at most N slices, the newest (default 500000);\n"
	      "                     what is cut is reported on stderr\n"
	      "  --no-skew          ignore the clock offsets stored by merge\n"
	      "  --no-chains        no markers and flows (skips the explain engine)\n"
	      "  --json             errors as {\"error\": ...}\n"
	      "tenant filters (only the threads and chains of the tenant's processes;\n"
	      "the node's counters stay):\n"
	      CW_TENANT_USAGE
	      "  --nodes HOST:PORT,...  ask these agents (`causeway serve`) instead of the\n"
	      "                     database; --fleet: the config's fleet.nodes (docs/fleet.md)\n"
	      "  --help             this text\n"
	      "\n"
	      "Fleet: --nodes HOST:PORT,... (or --fleet for the config's nodes) exports\n"
	      "the window from every agent at once, one process per node, with the\n"
	      "clock offsets the fan-out measures applied; --ca-cert, --client-cert,\n"
	      "--client-key, --token-file, --node-timeout and --skew-warn as for query.\n"
	      "Each agent sends at most its row cap (serve's max rows) per table.\n"
	      "\n"
	      "examples:\n"
	      "  causeway export --db causeway-demo.db -o trace.json\n"
	      "  causeway export --since 5m --max-events 100000 -o last5m.json\n"
	      "  causeway export --nodes gpu-node-01:8443,gpu-node-02:8443 -o fleet.json\n",
	      f);
}

static void fleet_warn(void *arg, const char *msg)
{
	cw_progress_hold(arg);
	cw_warn("export: %s", msg);
	cw_progress_release(arg);
}

/* The fleet export's phases on the progress line: the rows fetched from
 * the agents so far, then the trace's size as it is written. */
struct fleet_pg {
	struct cw_progress *pg;
	uint64_t rows;
	int fd;
};

static void fleet_progress(void *arg, const char *phase, uint64_t rows)
{
	struct fleet_pg *f = arg;

	f->rows += rows;
	if (phase) {
		cw_progress_phase(f->pg, phase);
		cw_progress_count(f->pg, 0, NULL);
		cw_progress_watch_fd(f->pg, f->fd);
	} else {
		cw_progress_count(f->pg, f->rows, "rows");
	}
}

static int parse_count(const char *s, uint64_t *out)
{
	return cw_parse_uint(s, 1, 100000000ULL, out);
}

int cmd_export(int argc, char **argv)
{
	enum { OPT_FROM = 256, OPT_TO, OPT_MAX, OPT_NOSKEW, OPT_NOCHAINS, OPT_FORMAT, OPT_TENANT };
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT }, { "output", required_argument, NULL, 'o' },
		{ "db", required_argument, NULL, 'd' },           { "since", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, OPT_FROM },    { "to", required_argument, NULL, OPT_TO },
		{ "max-events", required_argument, NULL, OPT_MAX }, { "no-skew", no_argument, NULL, OPT_NOSKEW },
		{ "no-chains", no_argument, NULL, OPT_NOCHAINS }, { "json", no_argument, NULL, 'j' },
		CW_TENANT_LONGOPTS(OPT_TENANT),
		{ "help", no_argument, NULL, 'h' },               { NULL, 0, NULL, 0 },
	};
	const char *db_path = cw_default_db(), *out_path = NULL, *format = "perfetto", *max = NULL;
	struct cw_export_opts o = { 0 };
	struct cw_export_stats stats;
	struct cw_fleet_opts fo = { 0 };
	struct cw_store *st = NULL;
	struct cw_atomic_file af = { 0 };
	/* The output rule reads its inputs again at the commit: they live as
	 * long as af. */
	const char *inputs[1] = { NULL };
	char err[512];
	FILE *out = stdout, *tty_out = NULL;
	int json = 0, fleet = 0, db_given = 0, c, ret, rc = CW_EXIT_OK, li;
	struct cw_scope sc = { .names = CW_SCOPE_FLAGS };
	struct cw_progress pg = { .fd = -1 };

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	if (cw_fleet_cli_wanted(argc, argv)) {
		if ((rc = cw_fleet_cli_extract(&argc, argv, json, &fo)))
			return rc;
		fleet = 1;
	}
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, "+:o:d:", longopts, &li)) != -1) {
		switch (c) {
		case OPT_FORMAT: format = optarg; break;
		case 'o': out_path = optarg; break;
		case 'd': db_path = optarg; db_given = 1; break;
		case 's': sc.since = optarg; break;
		case OPT_FROM: sc.from = optarg; break;
		case OPT_TO: sc.to = optarg; break;
		case OPT_MAX: max = optarg; break;
		case OPT_NOSKEW: o.no_skew = 1; break;
		case OPT_NOCHAINS: o.no_chains = 1; break;
		case 'j': json = 1; break;
		case OPT_TENANT:
			if ((rc = cw_scope_opt(&sc, longopts, li, optarg, json, "export")))
				goto out;
			break;
		case 'h':
			usage(stdout);
			goto out;
		default:
			rc = cw_opt_error(json, "export", c, argv);
			goto out;
		}
	}
	if (optind < argc) {
		rc = cw_opt_unexpected(json, "export", argv[optind]);
		goto out;
	}
	if (strcmp(format, "perfetto") && strcmp(format, "chrome")) {
		cw_report_error(json, "export: unknown format \"%s\" (perfetto is the one supported)", format);
		rc = CW_EXIT_USAGE;
			goto out;
	}
	if (cw_scope_parse(&sc, err, sizeof(err))) {
		cw_report_error(json, "export: %s", err);
		rc = CW_EXIT_USAGE;
		goto out;
	}
	/* since stays a duration: the export anchors it on its own newest
	 * data, every node's moved by its clock offset (export/perfetto.c). */
	o.since_ns = sc.since_ns;
	o.from_wall_ns = sc.from_ns;
	o.to_wall_ns = sc.to_ns;
	if (max && parse_count(max, &o.max_events) < 0) {
		char shown[CW_SHOWN_BUF];

		cw_report_error(json, "export: invalid --max-events \"%s\" (1 to 100000000)",
				cw_shown(max, shown));
		rc = CW_EXIT_USAGE;
			goto out;
	}
	if (fleet && db_given) {
		cw_report_error(json, "export: --db cannot be combined with --nodes or --fleet");
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (!fleet && (ret = cw_store_open(&st, db_path, CW_STORE_READONLY, err, sizeof(err)))) {
		cw_report_error(json, "export: %s", err);
		rc = CW_EXIT_DB;
		goto out;
	}
	if (!fleet)
		cw_warn_losses(db_path, st->db);
	if (fleet && sc.ntf) {
		/* The fleet export reads the agents' tables through SQL. */
		cw_report_error(json, "export: tenant filters apply to one store (merge the agents' stores first)");
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (!fleet && sc.ntf) {
		if ((ret = cw_scope_select(st->db, &sc)) < 0) {
			cw_report_error(json, "export: cannot read \"%s\": %s", db_path, cw_store_strerror(ret));
			rc = CW_EXIT_DB;
			goto out;
		}
		o.pids = sc.pids;
		o.npids = sc.npids;
		if (o.npids < 0) {
			/* An empty timeline would read as a quiet tenant. */
			cw_report_error(json, "export: nothing matches: no process of the store ran in the tenant named by "
					      "the filter");
			rc = CW_EXIT_NOMATCH;
			goto out;
		}
	}
	if (out_path && strcmp(out_path, "-")) {
		/* Never the database it reads (or its WAL); a device or FIFO
		 * is written in place, as curl -o does. */
		inputs[0] = db_path;
		struct cw_out_rule rule = { inputs, fleet ? 0 : 1, CW_OUT_REPLACE | CW_OUT_STREAM };

		if ((ret = cw_atomic_open(&af, out_path, &rule, err, sizeof(err)))) {
			cw_report_error(json, "export: %s", err);
			rc = ret == -EINVAL || ret == -EPERM || ret == -EISDIR ? CW_EXIT_USAGE : CW_EXIT_FAIL;
			goto out;
		}
		out = af.f;
	} else if (isatty(STDOUT_FILENO)) {
		/* JSON on a terminal: its C1 and bidi controls written as JSON
		 * escapes (util/term.h), the same JSON. */
		tty_out = cw_term_json_stream(stdout);
		if (tty_out)
			out = tty_out;
	}
	/* One store reads whole by default, as explain and query do; the
	 * --max-events cap still bounds the file. */
	if (!fleet && !sc.since && !sc.from && !sc.to)
		o.since_ns = UINT64_MAX;
	if (fleet) {
		struct fleet_pg fp = { &pg, 0, fileno(out) };

		cw_progress_start(&pg, "export", "fetching the agents' rows", json);
		fo.progress = fleet_progress;
		fo.progress_arg = &fp;
		ret = cw_export_perfetto_fleet(&fo, &o, out, &stats, fleet_warn, &pg, err, sizeof(err));
		cw_progress_end(&pg);
	} else {
		cw_progress_start(&pg, "export", "writing the trace", json);
		cw_progress_watch_fd(&pg, fileno(out));
		ret = cw_export_perfetto(st->db, &o, out, &stats, err, sizeof(err));
		cw_progress_end(&pg);
	}
	if (tty_out) {
		fclose(tty_out);
		tty_out = NULL;
		out = stdout;
	}
	if (af.f) {
		int cr = cw_atomic_close(&af, !ret, ret ? NULL : err, ret ? 0 : sizeof(err));

		if (!ret)
			ret = cr;
		out = stdout;
	}
	if (ret) {
		cw_report_error(json, "export: %s", err);
		rc = !fleet && (ret == -ENOTSUP || ret == -EBUSY) ? CW_EXIT_DB : CW_EXIT_FAIL;
		goto out;
	}
	if (stats.cut_from_wall_ns) {
		char t[40];
		cw_format_time(stats.cut_from_wall_ns, t, sizeof(t));
		cw_warn("export: %llu slices in the window, kept the newest %llu (from %s); raise --max-events or"
			" narrow --since",
			(unsigned long long)stats.in_window, (unsigned long long)stats.slices, t);
	}
	if (stats.unplaced)
		cw_warn("export: %llu slices left out: each overlapped %d others on its thread (block I/O requests"
			" in flight at once); query them with causeway query",
			(unsigned long long)stats.unplaced, CW_EXPORT_MAX_LANES);
	if (stats.requests_unplaced)
		cw_warn("export: %llu inference requests left out: each overlapped %d others on its connection",
			(unsigned long long)stats.requests_unplaced, 4);
	if (out_path && strcmp(out_path, "-") && stats.requests)
		fprintf(stderr, "causeway: export: %llu inference requests on their connections' tracks\n",
			(unsigned long long)stats.requests);
	if (out_path && strcmp(out_path, "-"))
		fprintf(stderr,
			"causeway: export: wrote \"%s\": %d node%s, %d threads, %llu slices (%llu off-CPU, %llu I/O),"
			" %llu chain markers, %llu flows, %llu counter samples%s\n",
			out_path, stats.nodes, stats.nodes == 1 ? "" : "s", stats.threads,
			(unsigned long long)stats.slices, (unsigned long long)stats.offcpu,
			(unsigned long long)stats.io, (unsigned long long)stats.markers,
			(unsigned long long)stats.flows, (unsigned long long)stats.counters,
			stats.skew_applied ? "; clock offsets applied (otherData.clock_offsets_ns)" : "");
	else if (stats.skew_applied)
		fprintf(stderr, "causeway: export: clock offsets of %d node%s applied (otherData.clock_offsets_ns)\n",
			stats.skew_applied, stats.skew_applied == 1 ? "" : "s");
out:
	cw_scope_release(&sc);
	cw_store_close(st);
	if (fleet)
		cw_fleet_cli_release(&fo);
	return rc;
}
