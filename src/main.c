/* causeway: global flags and the command table, nothing else. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "config/config.h"
#include "loader/libbpf_log.h"
#include "util/log.h"
#include "util/parse.h"

const char *cw_global_config_path;
const char *cw_global_node;

static const struct cw_command commands[] = {
	{ "demo", cmd_demo, "diagnose a synthetic GPU incident (no GPU, no root)" },
	{ "explain", cmd_explain, "causal chains: why calls were slow, with fixes" },
	{ "query", cmd_query, "per-op summary, or read-only SQL over the trace" },
	{ "check", cmd_check, "what this host supports and what trace would attach" },
	{ "trace", cmd_trace, "trace CUDA, NCCL and the kernel with eBPF into the store (root)" },
	{ "where", cmd_where, "one-shot Python and native stacks of every thread of a process" },
	{ "export", cmd_export, "Perfetto/Chrome trace JSON of a database or a fleet" },
	{ "merge", cmd_merge, "merge node databases into one" },
	{ "serve", cmd_serve, "HTTPS API, dashboard and /metrics over the store" },
	{ "mcp", cmd_mcp, "MCP server on stdio for AI assistants (also /mcp on serve)" },
	{ "version", cmd_version, "version, commit, build date and library versions" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	const struct cw_command *c;

	fprintf(f, "usage: causeway [--config FILE] [--node NAME] [-v] COMMAND [ARGS]\n\n"
		   "causeway explains why GPU work is slow: it traces CUDA, NCCL and the\n"
		   "Linux kernel with eBPF, joins them per thread, and names the cause.\n\n"
		   "commands:\n");
	for (c = commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->summary);
	fprintf(f, "  %-9s %s\n", "help", "this text, or a command's options: causeway help COMMAND");
	fprintf(f, "\nRun 'causeway COMMAND --help' (or 'causeway help COMMAND') for a command's\n"
		   "options and examples.\n"
		   "\nexamples:\n"
		   "  causeway demo\n"
		   "  causeway explain --db causeway-demo.db\n"
		   "  causeway help explain\n");
}

static const struct cw_command *find_command(const char *name)
{
	for (const struct cw_command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int unknown_command(const char *name)
{
	const char *names[sizeof(commands) / sizeof(commands[0])];
	const char *pick;
	size_t n = 0;

	/* Other tools' words for what a command here does. */
	if (!strcmp(name, "dashboard")) {
		cw_err("unknown command \"dashboard\": the dashboard is served by 'causeway serve' (docs/dashboard.md)");
		return CW_EXIT_USAGE;
	}
	for (const struct cw_command *c = commands; c->name; c++)
		names[n++] = c->name;
	names[n++] = "help";
	pick = cw_suggest(name, names, n);
	if (pick)
		cw_err("unknown command \"%s\" (did you mean \"%s\"?); see 'causeway --help'", name, pick);
	else
		cw_err("unknown command \"%s\"; see 'causeway --help'", name);
	return CW_EXIT_USAGE;
}

/* "--config FILE" (or "--config=FILE") may also follow the command: it is
 * taken out of the command's arguments before the command parses them.
 * Arguments after "--" (trace's COMMAND) are left alone. Returns the new
 * argc, or -1 when the flag lacks its value. */
static int take_config_flag(int argc, char **argv)
{
	int i = 1, out = 1;

	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc)
				return -1;
			cw_global_config_path = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			cw_global_config_path = argv[i] + 9;
		} else {
			argv[out++] = argv[i];
		}
	}
	for (; i < argc; i++)
		argv[out++] = argv[i];
	argv[out] = NULL;
	return out;
}

static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

static int wants_json(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return 1;
	return 0;
}

/* Every command but version reads the config file (flag, /etc, ~): a bad
 * one stops it here with the file and line, whatever the command. */
static int run_command(const struct cw_command *c, int argc, char **argv)
{
	const struct cw_config *cfg;
	char err[512];
	int rc;

	argc = take_config_flag(argc, argv);
	if (argc < 0) {
		cw_err("%s: --config needs a file", argv[0]);
		return CW_EXIT_USAGE;
	}
	/* The node name goes into rows, JSON, Prometheus labels and banners:
	 * checked once here for every command, and echoed only in part. */
	if (cw_global_node && !cw_node_name_valid(cw_global_node)) {
		char shown[CW_SHOWN_BUF];

		cw_report_error(wants_json(argc, argv), "bad --node \"%s\" (" CW_NODE_NAME_RULE ")",
				cw_shown(cw_global_node, shown));
		return CW_EXIT_USAGE;
	}
	if (strcmp(c->name, "version") && !wants_help(argc, argv) && (rc = cw_config_get(&cfg, err, sizeof(err)))) {
		cw_report_error(wants_json(argc, argv), "%s", err);
		return CW_EXIT_USAGE;
	}
	return c->fn(argc, argv);
}

int main(int argc, char **argv)
{
	const struct cw_command *c;
	int i = 1;

	/* libbpf speaks through causeway's log (--verbose), never on its own. */
	cw_libbpf_log_init();
	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return CW_EXIT_OK;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			cw_verbose = 1;
		} else if (!strcmp(argv[i], "--check-args")) {
			cw_global_check_args = 1;
		} else if (!strcmp(argv[i], "--version")) {
			return cmd_version(1, (char *[]){ "version", NULL });
		} else if ((!strcmp(argv[i], "--config") || !strcmp(argv[i], "--node")) && i + 1 < argc) {
			if (argv[i][2] == 'c')
				cw_global_config_path = argv[i + 1];
			else
				cw_global_node = argv[i + 1];
			i++;
		} else {
			static const char *const globals[] = { "--config", "--node", "--verbose", "--version",
								"--help", "--check-args", NULL };
			char hint[96];

			cw_err("unknown option \"%s\"%s; see 'causeway --help'", argv[i],
			       cw_opt_hint(argv[i], globals, hint, sizeof(hint)));
			return CW_EXIT_USAGE;
		}
		i++;
	}
	if (i >= argc) {
		usage(stderr);
		return CW_EXIT_USAGE;
	}
	/* causeway help [COMMAND]: the same text as --help. */
	if (!strcmp(argv[i], "help")) {
		if (i + 1 >= argc) {
			usage(stdout);
			return CW_EXIT_OK;
		}
		if (i + 2 < argc) {
			cw_err("help: one command at a time; see 'causeway help'");
			return CW_EXIT_USAGE;
		}
		c = find_command(argv[i + 1]);
		if (!c)
			return unknown_command(argv[i + 1]);
		return run_command(c, 2, (char *[]){ (char *)c->name, "--help", NULL });
	}
	c = find_command(argv[i]);
	if (c)
		return run_command(c, argc - i, argv + i);
	return unknown_command(argv[i]);
}
