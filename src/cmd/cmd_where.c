/* causeway where PID: a one-shot dump of every thread's Python stack (the
 * executing line of each frame) and native stack. The dump is
 * where/where.c (shared with the MCP where tool); this file is flags and
 * the text form. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/term.h"
#include "where/where.h"

static void usage(FILE *f)
{
	fputs("usage: causeway where PID [--json] [--no-native | --frame-pointers]\n"
	      "\n"
	      "Prints the Python stack (file, function and executing line of every\n"
	      "frame, innermost first) and the native stack of every thread of process\n"
	      "PID. Supports CPython 3.10 to 3.15, shared (libpython) and static builds,\n"
	      "and the free-threaded 3.14t and 3.15t (per-thread bytecode copies).\n"
	      "The process is paused with ptrace for the duration of the dump.\n"
	      "Native stacks are unwound through DWARF call-frame information\n"
	      "(.eh_frame, or .debug_frame from a build-id debug file under the\n"
	      "process's own /usr/lib/debug) and symbolized from .symtab, .dynsym,\n"
	      "MiniDebugInfo and build-id debug files; when DWARF yields no caller,\n"
	      "frame pointers are followed instead. Each thread says which unwinder\n"
	      "produced its stack (dwarf or frame-pointer). Walks stop at 256 frames\n"
	      "and DWARF unwinding at 5 s per dump.\n"
	      "\n"
	      "  --json        one JSON object\n"
	      "  --no-native   Python stacks only; the process is not paused\n"
	      "  --frame-pointers\n"
	      "                native stacks through frame pointers only, no DWARF\n"
	      "  --help        this text\n"
	      "\n"
	      "examples:\n"
	      "  causeway where 4821\n"
	      "  causeway where --json --no-native 4821\n",
	      f);
}

static void print_text_to(FILE *out, json_t *root)
{
	json_t *threads = json_object_get(root, "threads"), *t;
	size_t i, j;

	fprintf(out, "process %lld", json_integer_value(json_object_get(root, "pid")));
	if (json_object_get(root, "python"))
		fprintf(out, " (python %s%s, %s)", json_string_value(json_object_get(root, "python")),
		       json_is_true(json_object_get(root, "free_threaded")) ? " free-threaded" : "",
		       json_string_value(json_object_get(root, "runtime_binary")));
	else if (json_object_get(root, "python_error"))
		fprintf(out, " (python: %s)", json_string_value(json_object_get(root, "python_error")));
	fprintf(out, "\n");
	json_array_foreach(threads, i, t) {
		json_t *py = json_object_get(t, "python"), *nat = json_object_get(t, "native"), *f;

		fprintf(out, "\nthread %lld%s\n", json_integer_value(json_object_get(t, "tid")),
		       json_is_true(json_object_get(t, "main")) ? " (main)" : "");
		json_array_foreach(py, j, f)
			fprintf(out, "  [py] %s:%lld in %s\n", json_string_value(json_object_get(f, "file")),
			       json_integer_value(json_object_get(f, "line")),
			       json_string_value(json_object_get(f, "function")));
		if (json_is_true(json_object_get(t, "python_truncated")))
			fprintf(out, "  [py] ... (stack truncated)\n");
		if (nat) {
			json_t *derr = json_object_get(t, "native_dwarf_error");

			fprintf(out, "  native (%s%s%s):\n", json_string_value(json_object_get(t, "native_unwinder")),
			       derr ? "; dwarf: " : "", derr ? json_string_value(derr) : "");
		}
		json_array_foreach(nat, j, f)
			fprintf(out, "  %s\n", json_string_value(f));
		if (json_is_true(json_object_get(t, "native_truncated")))
			fprintf(out, "  ... (native stack truncated)\n");
		if (json_object_get(t, "native_error"))
			fprintf(out, "  (native stack: %s)\n", json_string_value(json_object_get(t, "native_error")));
	}
}

/* The stack holds stored text (a traced process's file and function
 * names): written out escaped (util/term.h). */
static void print_text(json_t *root)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	print_text_to(f, root);
	if (!fclose(f))
		(void)cw_term_put_lines(stdout, buf);
	free(buf);
}

int cmd_where(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "no-native", no_argument, NULL, 'n' },
		{ "frame-pointers", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int json = 0, native = CW_WHERE_NATIVE, fp_only = 0, c, rc;
	char err[512];
	json_t *root = NULL;
	uint64_t pid_v;
	long pid;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'n': native = CW_WHERE_NO_NATIVE; break;
		case 'f': fp_only = 1; break;
		case 'h': usage(stdout); return CW_EXIT_OK;
		default:
			return cw_opt_error(json, "where", c, argv);
		}
	}
	if (fp_only && native == CW_WHERE_NO_NATIVE) {
		cw_report_error(json, "where: --frame-pointers and --no-native exclude each other");
		return CW_EXIT_USAGE;
	}
	if (fp_only)
		native = CW_WHERE_FP_ONLY;
	if (optind != argc - 1) {
		cw_report_error(json, "where: expected exactly one PID");
		return CW_EXIT_USAGE;
	}
	if (cw_parse_uint(argv[optind], 1, CW_PID_MAX, &pid_v)) {
		char shown[CW_SHOWN_BUF];

		cw_report_error(json, "where: invalid pid \"%s\" (1 to %d)", cw_shown(argv[optind], shown),
				CW_PID_MAX);
		return CW_EXIT_USAGE;
	}
	pid = (long)pid_v;
	rc = cw_where_collect(pid, native, &root, err, sizeof(err));
	rc = rc == -ESRCH || rc == -ENOEXEC ? CW_EXIT_NOTARGET : rc ? CW_EXIT_FAIL : CW_EXIT_OK;
	if (!root) {
		cw_report_error(json, "%s", err);
		return rc;
	}
	if (json) {
		char *s = json_dumps(root, JSON_INDENT(2));

		if (s)
			puts(s);
		free(s);
	} else {
		print_text(root);
	}
	if (rc == CW_EXIT_NOTARGET && !json)
		cw_err("where: %s", json_string_value(json_object_get(root, "python_error")));
	json_decref(root);
	return rc;
}
