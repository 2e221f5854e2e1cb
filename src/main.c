/* causeway: global flags and the command table, nothing else. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "util/log.h"

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
	fprintf(f, "\nRun 'causeway COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	const struct cw_command *c;
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return CW_EXIT_OK;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			cw_verbose = 1;
		} else if (!strcmp(argv[i], "--version")) {
			return cmd_version(1, (char *[]){ "version", NULL });
		} else if ((!strcmp(argv[i], "--config") || !strcmp(argv[i], "--node")) && i + 1 < argc) {
			if (argv[i][2] == 'c')
				cw_global_config_path = argv[i + 1];
			else
				cw_global_node = argv[i + 1];
			i++;
		} else {
			cw_err("unknown option \"%s\"; see 'causeway --help'", argv[i]);
			return CW_EXIT_USAGE;
		}
		i++;
	}
	if (i >= argc) {
		usage(stderr);
		return CW_EXIT_USAGE;
	}
	for (c = commands; c->name; c++)
		if (!strcmp(c->name, argv[i]))
			return c->fn(argc - i, argv + i);
	cw_err("unknown command \"%s\"; see 'causeway --help'", argv[i]);
	return CW_EXIT_USAGE;
}
