/* causeway check: what this host supports and what trace would attach to.
 * The report is check/report.c (shared with the MCP check tool); this file
 * is flags and the text table. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/report.h"
#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "util/log.h"
#include "util/table.h"

static void usage(FILE *f)
{
	fputs("usage: causeway check [--json] [--no-load]\n"
	      "\n"
	      "Reports what this host offers trace: kernel and BTF, privileges,\n"
	      "tracefs, BPF program and map types, tp_btf, uprobes, the CUDA\n"
	      "runtime, driver and NCCL libraries on disk (versions and how many\n"
	      "hooked symbols each exports), CPython installations, the GPU and\n"
	      "its telemetry (NVML: driver version and devices).\n"
	      "Each item is ok, warn or fail; failures come with a recommendation.\n"
	      "Libraries are only read, never run. As root, check loads the BPF\n"
	      "programs trace would load (and unloads them at once): each kernel\n"
	      "feature says what trace uses or does instead, and each program is\n"
	      "named loaded or left out on this kernel.\n"
	      "\n"
	      "exit status: 0 when trace can run here (warnings allowed),\n"
	      "             4 when an item failed.\n"
	      "\n"
	      "  --json     one JSON object (see docs/check.md)\n"
	      "  --no-load  probe the features, but load no BPF object (quicker)\n"
	      "  --help     this text\n"
	      "\n"
	      "examples:\n"
	      "  causeway check\n"
	      "  causeway check --json\n",
	      f);
}

static void print_text(json_t *o)
{
	struct cw_table *t = cw_table_new(3);
	size_t i;
	json_t *c, *checks = json_object_get(o, "checks");
	int ok = json_is_true(json_object_get(o, "ok")), warn = 0;

	if (!t)
		return;
	cw_table_header(t, 0, "status", CW_ALIGN_LEFT);
	cw_table_header(t, 1, "item", CW_ALIGN_LEFT);
	cw_table_header(t, 2, "detail", CW_ALIGN_LEFT);
	json_array_foreach(checks, i, c) {
		warn |= strcmp(json_string_value(json_object_get(c, "status")), "ok") != 0;
		cw_table_row(t);
		cw_table_set(t, 0, json_string_value(json_object_get(c, "status")));
		cw_table_set(t, 1, json_string_value(json_object_get(c, "name")));
		cw_table_set(t, 2, json_string_value(json_object_get(c, "detail")));
	}
	cw_table_print(t, stdout);
	cw_table_free(t);
	json_array_foreach(checks, i, c) {
		const char *fix = json_string_value(json_object_get(c, "recommendation"));

		if (fix)
			printf("\n%s (%s): %s", json_string_value(json_object_get(c, "name")),
			       json_string_value(json_object_get(c, "status")), fix);
	}
	printf("%s\n%s\n", warn ? "\n" : "",
	       !ok ? "trace cannot run here: fix the failed items above"
				    : "trace can run here");
}

void cw_check_env_default(struct cw_check_env *env)
{
	env->node = cw_default_node();
	env->store = cw_default_db();
	env->nvml_lib = cw_default_nvml_lib();
	env->fail_exit = CW_EXIT_NOFEATURE;
}

int cmd_check(int argc, char **argv)
{
	struct cw_check_env env;
	json_t *o;
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "no-load", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, no_load = 0, i, rc, c;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, ":", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CW_EXIT_OK;
		}
		if (c == 'n')
			no_load = 1;
		else if (c != 'j')
			return cw_opt_error(json, "check", c, argv);
	}
	if (optind < argc)
		return cw_opt_unexpected(json, "check", argv[optind]);
	cw_check_env_default(&env);
	env.load = !no_load;
	if (cw_check_report(&env, &o)) {
		cw_report_error(json, "check: out of memory");
		return CW_EXIT_FAIL;
	}
	rc = (int)json_integer_value(json_object_get(o, "exit"));
	if (json) {
		json_dumpf(o, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else {
		print_text(o);
	}
	json_decref(o);
	return rc;
}
