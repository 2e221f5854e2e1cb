/* causeway demo: generates a synthetic scenario through the real pipeline
 * into a fresh database, then prints explain's diagnosis of it. The
 * generator is src/demo/; this file is flags, the database swap, errors
 * and output. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "demo/build.h"
#include "demo/demo.h"
#include "store/store.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

#define DEMO_NODE "demo-node"
/* Not trace's default (causeway.db, or the config's store path): a demo
 * must never land on a store that holds real traces. */
#define DEMO_DEFAULT_DB "causeway-demo.db"
/* Pacing: 0 is as fast as possible; otherwise a speed-up of real time.
 * Below MIN_SPEED a scenario would take days (and tiny values, 1e-300,
 * overflow the schedule into no pacing at all). */
#define MIN_SPEED 0.01
#define MAX_SPEED 1000.0

static void usage(FILE *f)
{
	fputs("usage: causeway demo [SCENARIO] [--db PATH] [--json] [--speed X] [--seed N]\n"
	      "                     [--now] [--list] [--force] [--no-gpu]\n"
	      "\n"
	      "Simulates a PyTorch training process (pid 4821) on GPU 0 (inference-ttft:\n"
	      "an inference server answering HTTP requests) and one cause of slowness,\n"
	      "writes it through the same decode -> pairing -> store path live tracing\n"
	      "uses, then prints explain's diagnosis. No GPU and no root needed.\n"
	      "An existing demo database at PATH is replaced; any other file is left\n"
	      "alone. Scenarios: causeway demo --list (default: incident).\n"
	      "\n"
	      "  -d, --db PATH  database to (re)create (default causeway-demo.db)\n"
	      "  --force      replace PATH even when it holds traces, has a newer schema\n"
	      "               or another causeway process is writing it\n"
	      "  --json       one object: {scenario, db, events, diagnosis}\n"
	      "  --speed X    pace the generation at X times real time (default 0: as\n"
	      "               fast as possible)\n"
	      "  --seed N     seed of the jitter (default 1); same seed, same database\n"
	      "  --now        stamp wall-clock times from now instead of the fixed\n"
	      "               2026-01-01T00:00:00Z start (output is then not reproducible)\n"
	      "  --list       list the scenarios and what each simulates\n"
	      "  --no-gpu     accepted and ignored: the demo never needs a GPU\n"
	      "  --help       this text\n"
	      "\n"
	      "The global --node NAME sets the node the rows carry (default demo-node).\n"
	      "\n"
	      "examples:\n"
	      "  causeway demo && causeway explain --db causeway-demo.db\n"
	      "  causeway demo gpu-steal --db steal.db --json\n"
	      "  causeway demo io-contention --speed 100\n"
	      "  causeway demo inference-ttft --db serve.db\n"
	      "  causeway demo --no-gpu incident\n",
	      f);
}

static int list(int json)
{
	size_t n;
	const struct cw_demo_scenario *const *t = cw_demo_scenarios(&n);

	if (json) {
		json_t *a = json_array();

		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_pack("{s:s,s:s,s:o,s:b}", "name", t[i]->name, "simulates",
							   t[i]->title, "expect",
							   t[i]->expect ? json_string(t[i]->expect) : json_null(),
							   "default", !strcmp(t[i]->name, CW_DEMO_DEFAULT_SCENARIO)));
		json_dumpf(a, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(a);
		return CW_EXIT_OK;
	}
	for (size_t i = 0; i < n; i++)
		printf("%-22s %s%s\n", t[i]->name, t[i]->title,
		       !strcmp(t[i]->name, CW_DEMO_DEFAULT_SCENARIO) ? " (default)" : "");
	return CW_EXIT_OK;
}

static void scenario_names(char *buf, size_t len)
{
	size_t n, off = 0;
	const struct cw_demo_scenario *const *t = cw_demo_scenarios(&n);

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", t[i]->name);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}

static int parse_speed(const char *s, double *out)
{
	double v;
	int rc = cw_parse_real(s, 0, MAX_SPEED, &v);

	if (!rc && v != 0 && v < MIN_SPEED)
		rc = -ERANGE;
	if (!rc)
		*out = v;
	return rc;
}

static json_t *summary_json(const char *scenario, const char *db, const struct cw_demo_result *r,
			    const struct cw_explain_result *ex)
{
	return json_pack("{s:s,s:s,s:I,s:o}", "scenario", scenario, "db", db, "events",
			 (json_int_t)(r->events + r->offcpu + r->snapshots), "diagnosis", cw_explain_to_json(ex));
}

static void print_header(const struct cw_demo_scenario *sc, const char *db, const struct cw_demo_result *r,
			 uint64_t seed)
{
	double rate = r->elapsed_s > 0 ? (double)r->records / r->elapsed_s : 0;

	printf("causeway demo: %s\n", sc->name);
	printf("  simulates: %s\n", sc->title);
	if (r->requests && !r->steps)
		printf("  synthetic run: %.0f s, an inference server answering HTTP requests, seed %llu\n",
		       (double)r->synthetic_ns / 1e9, (unsigned long long)seed);
	else
		printf("  synthetic run: %.0f s, %llu training steps of pid 4821 (python) on GPU 0, seed %llu\n",
		       (double)r->synthetic_ns / 1e9, (unsigned long long)r->steps, (unsigned long long)seed);
	printf("  wrote %llu events, %llu off-CPU intervals, %llu snapshots", (unsigned long long)r->events,
	       (unsigned long long)r->offcpu, (unsigned long long)r->snapshots);
	if (r->requests)
		printf(", %llu requests", (unsigned long long)r->requests);
	printf(" to \"%s\"\n", db);
	printf("  fed %llu raw records in %.2f s (%.0f records/s), %llu rejected\n\n",
	       (unsigned long long)r->records, r->elapsed_s, rate, (unsigned long long)r->rejected);
}

int cmd_demo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },   { "json", no_argument, NULL, 'j' },
		{ "speed", required_argument, NULL, 's' }, { "seed", required_argument, NULL, 'S' },
		{ "now", no_argument, NULL, 'n' },        { "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },       { "force", no_argument, NULL, 'f' },
		{ "no-gpu", no_argument, NULL, 'G' },     { NULL, 0, NULL, 0 },
	};
	const char *db = DEMO_DEFAULT_DB, *name = CW_DEMO_DEFAULT_SCENARIO;
	int json = 0, do_list = 0, now = 0, force = 0, c, rc = CW_EXIT_FAIL;
	struct cw_demo_opts o = { .seed = 1 };
	struct cw_demo_result res;
	struct cw_explain_result ex = { 0 };
	char err[512] = "", names[512], cmdline[256], shown[CW_SHOWN_BUF];

	/* A first pass for --json so that usage errors are reported in the
	 * right format wherever the flag sits. */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	opterr = 0;
	optind = 1;
	while ((c = cw_getopt(argc, argv, ":d:", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			db = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 's':
			if (parse_speed(optarg, &o.speed)) {
				cw_report_error(json, "invalid --speed \"%s\": 0 (as fast as possible) or a number "
						      "from %g to %g", cw_shown(optarg, shown), MIN_SPEED, MAX_SPEED);
				return CW_EXIT_USAGE;
			}
			break;
		case 'S':
			if (cw_parse_uint(optarg, 0, UINT64_MAX, &o.seed)) {
				cw_report_error(json, "invalid --seed \"%s\": an unsigned 64-bit integer",
						cw_shown(optarg, shown));
				return CW_EXIT_USAGE;
			}
			break;
		case 'n':
			now = 1;
			break;
		case 'l':
			do_list = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 'G':
			/* The demo never touches a GPU; accepted as trace takes it. */
			break;
		case 'h':
			usage(stdout);
			return CW_EXIT_OK;
		default:
			return cw_opt_error(json, "demo", c, argv);
		}
	}
	if (do_list)
		return list(json);
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc) {
		cw_report_error(json, "unexpected argument \"%s\": one scenario at a time", argv[optind]);
		return CW_EXIT_USAGE;
	}
	o.scenario = cw_demo_find(name);
	if (!o.scenario) {
		scenario_names(names, sizeof(names));
		cw_report_error(json, "unknown scenario \"%s\"; valid scenarios: %s", name, names);
		return CW_EXIT_USAGE;
	}
	if (!*db) {
		cw_report_error(json, "--db needs a path");
		return CW_EXIT_USAGE;
	}
	o.node = cw_global_node ? cw_global_node : DEMO_NODE;
	o.progress = 1;
	o.wall_start = now ? cw_realtime_ns() : 0;
	snprintf(cmdline, sizeof(cmdline), "causeway demo %s --seed %llu", o.scenario->name,
		 (unsigned long long)o.seed);
	o.command = cmdline;
	rc = cw_demo_build(db, &o, now, force, &res, &ex, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		return rc == -E2BIG ? CW_EXIT_USAGE : rc == -EBADMSG ? CW_EXIT_FAIL : CW_EXIT_DB;
	}
	rc = CW_EXIT_FAIL;
	if (json) {
		json_t *j = summary_json(o.scenario->name, db, &res, &ex);

		if (!j || json_dumpf(j, stdout, JSON_INDENT(2))) {
			json_decref(j);
			cw_report_error(json, "out of memory");
			goto out;
		}
		fputc('\n', stdout);
		json_decref(j);
	} else {
		print_header(o.scenario, db, &res, o.seed);
		cw_explain_print_text(stdout, &ex, isatty(STDOUT_FILENO));
	}
	rc = CW_EXIT_OK;
out:
	cw_explain_result_free(&ex);
	return rc;
}
