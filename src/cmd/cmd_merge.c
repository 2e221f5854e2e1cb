/* causeway merge: node databases into one cluster database. The work is in
 * src/fleet/merge.c; this file is flags, errors and the summary. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "fleet/merge.h"
#include "util/log.h"
#include "util/table.h"
#include "util/utf8.h"

/* Progress goes to stderr when the inputs are this big together. */
#define PROGRESS_BYTES (64LL << 20)

static void usage(FILE *f)
{
	fputs("usage: causeway merge A.db B.db ... -o OUT.db [--force-node [INPUT=]NAME]... [--force] [--json]\n"
	      "\n"
	      "Merges node databases (copied from the nodes of a cluster) into one, so\n"
	      "that explain, query and export see every node. Row ids are renumbered,\n"
	      "native and Python stacks are deduplicated, every row keeps its node, and\n"
	      "the clock offset of each node is estimated from NCCL collectives and\n"
	      "reported (stored in meta 'merge.skew'; export applies it). The output is\n"
	      "written to OUT.db.tmp-XXXXXX and renamed when complete: a failed merge\n"
	      "leaves nothing behind. Inputs are only read.\n"
	      "\n"
	      "  -o, --output PATH        the merged database (required)\n"
	      "  --force-node INPUT=NAME  store the rows of INPUT (a single-node database)\n"
	      "                           under node NAME; repeatable\n"
	      "  --force-node NAME        the same for the input given just before it\n"
	      "  --force                  replace OUT.db when it exists\n"
	      "  --json                   a JSON summary (rows per table and node, skew)\n"
	      "  --help                   this text\n"
	      "\n"
	      "Two inputs that hold the same node name are refused unless one is\n"
	      "relabelled with --force-node.\n"
	      "\n"
	      "examples:\n"
	      "  causeway merge node-01.db node-02.db -o cluster.db\n"
	      "  causeway merge old.db --force-node gpu-node-03 new.db -o cluster.db --json\n",
	      f);
}

static int pending_stop(void *arg)
{
	sigset_t s;

	(void)arg;
	return sigpending(&s) == 0 &&
	       (sigismember(&s, SIGINT) == 1 || sigismember(&s, SIGTERM) == 1 || sigismember(&s, SIGHUP) == 1);
}

static void print_progress(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "causeway: merge: %s\n", msg);
}

static void fmt_offset(const struct cw_merge_result *r, int i, char *buf, size_t len)
{
	const struct cw_merge_skew *k = &r->skew[i];

	if (!k->known)
		snprintf(buf, len, "unknown (no matching NCCL collectives)");
	else if (!strcmp(r->reference, r->nodes[i].name))
		snprintf(buf, len, "reference (%d collectives)", k->samples);
	else
		snprintf(buf, len, "%+.3f ms (spread %.3f ms, %d collectives%s)", (double)k->offset_ns / 1e6,
			 (double)k->spread_ns / 1e6, k->samples, k->after_sync == 1 ? ", by the synchronize after them" : k->after_sync == 2 ? ", by NCCL sequence numbers" : "");
}

static json_t *rows_json(const int64_t *rows, int node_tables_only)
{
	json_t *o = json_object();

	for (int t = 0; o && t < CW_MT_MAX; t++)
		if (!node_tables_only || cw_merge_table_has_node(t))
			json_object_set_new(o, cw_merge_table_name(t), json_integer(rows[t]));
	return o;
}

static int print_json(const struct cw_merge_opts *o, const struct cw_merge_result *r)
{
	json_t *root = json_object(), *nodes = json_array(), *dedup = json_object(), *skew = json_object();
	char *s;

	for (int i = 0; i < r->nnodes; i++) {
		const struct cw_merge_node *n = &r->nodes[i];
		const struct cw_merge_skew *k = &r->skew[i];
		json_t *jn = json_pack("{s:o,s:s,s:o}", "node", cw_json_str(n->name), "input", o->inputs[n->input].path, "rows",
				       rows_json(n->rows, 1));
		if (strcmp(n->name, n->orig))
			json_object_set_new(jn, "relabelled_from", cw_json_str(n->orig));
		if (k->known) {
			json_object_set_new(jn, "clock_offset_ns", json_integer(k->offset_ns));
			json_object_set_new(jn, "clock_spread_ns", json_integer(k->spread_ns));
			json_object_set_new(jn, "skew_samples", json_integer(k->samples));
			json_object_set_new(jn, "skew_signal",
					    json_string(cw_merge_skew_signal(k)));
		} else {
			json_object_set_new(jn, "clock_offset_ns", json_null());
		}
		json_array_append_new(nodes, jn);
	}
	json_object_set_new(dedup, "stacks", json_pack("{s:I,s:I}", "read", (json_int_t)r->in_rows[CW_MT_STACKS],
						       "kept", (json_int_t)r->rows[CW_MT_STACKS]));
	json_object_set_new(dedup, "py_stacks",
			    json_pack("{s:I,s:I}", "read", (json_int_t)r->in_rows[CW_MT_PY_STACKS], "kept",
				      (json_int_t)r->rows[CW_MT_PY_STACKS]));
	json_object_set_new(dedup, "py_code", json_pack("{s:I,s:I}", "read", (json_int_t)r->in_rows[CW_MT_PY_CODE],
							"kept", (json_int_t)r->rows[CW_MT_PY_CODE]));
	json_object_set_new(skew, "method", json_string("nccl collective completion"));
	json_object_set_new(skew, "reference", r->reference[0] ? json_string(r->reference) : json_null());
	json_object_set_new(root, "output", json_string(o->out_path));
	json_object_set_new(root, "inputs", json_integer(o->ninputs));
	json_object_set_new(root, "rows", rows_json(r->rows, 0));
	json_object_set_new(root, "input_rows", rows_json(r->in_rows, 0));
	json_object_set_new(root, "deduplicated", dedup);
	json_object_set_new(root, "skew", skew);
	json_object_set_new(root, "nodes", nodes);
	s = json_dumps(root, JSON_INDENT(2));
	json_decref(root);
	if (!s)
		return -ENOMEM;
	puts(s);
	free(s);
	return 0;
}

static int print_text(const struct cw_merge_opts *o, const struct cw_merge_result *r)
{
	struct cw_table *t = cw_table_new(8);
	char off[128];
	int ret;

	if (!t)
		return -ENOMEM;
	printf("merged %d input%s into \"%s\": %d node%s, %lld events\n\n", o->ninputs, o->ninputs == 1 ? "" : "s",
	       o->out_path, r->nnodes, r->nnodes == 1 ? "" : "s", (long long)r->rows[CW_MT_EVENTS]);
	cw_table_header(t, 0, "node", CW_ALIGN_LEFT);
	cw_table_header(t, 1, "input", CW_ALIGN_LEFT);
	cw_table_header(t, 2, "events", CW_ALIGN_RIGHT);
	cw_table_header(t, 3, "offcpu", CW_ALIGN_RIGHT);
	cw_table_header(t, 4, "snapshots", CW_ALIGN_RIGHT);
	cw_table_header(t, 5, "processes", CW_ALIGN_RIGHT);
	cw_table_header(t, 6, "chains", CW_ALIGN_RIGHT);
	cw_table_header(t, 7, "clock offset", CW_ALIGN_LEFT);
	for (int i = 0; i < r->nnodes; i++) {
		const struct cw_merge_node *n = &r->nodes[i];
		cw_table_row(t);
		if (strcmp(n->name, n->orig))
			cw_table_setf(t, 0, "%s (was %s)", n->name, n->orig);
		else
			cw_table_set(t, 0, n->name);
		cw_table_set(t, 1, o->inputs[n->input].path);
		cw_table_setf(t, 2, "%lld", (long long)n->rows[CW_MT_EVENTS]);
		cw_table_setf(t, 3, "%lld", (long long)n->rows[CW_MT_OFFCPU]);
		cw_table_setf(t, 4, "%lld", (long long)n->rows[CW_MT_SNAPSHOTS]);
		cw_table_setf(t, 5, "%lld", (long long)n->rows[CW_MT_PROCESSES]);
		cw_table_setf(t, 6, "%lld", (long long)n->rows[CW_MT_CHAINS]);
		fmt_offset(r, i, off, sizeof(off));
		cw_table_set(t, 7, off);
	}
	ret = cw_table_print(t, stdout);
	cw_table_free(t);
	printf("\nstacks: %lld read, %lld kept; python stacks: %lld read, %lld kept (deduplicated by hash)\n",
	       (long long)r->in_rows[CW_MT_STACKS], (long long)r->rows[CW_MT_STACKS],
	       (long long)r->in_rows[CW_MT_PY_STACKS], (long long)r->rows[CW_MT_PY_STACKS]);
	if (r->reference[0])
		printf("clock offsets: from NCCL collective completion times, relative to \"%s\";"
		       " stored in meta 'merge.skew', applied by export\n",
		       r->reference);
	else
		printf("clock offsets: unknown (no NCCL collectives to align)\n");
	return ret;
}

/* "INPUT=NAME" names an input; a bare "NAME" is for the input given just
 * before it on the command line (at: its index, -1 when none came yet).
 * An input relabelled twice, or a bare NAME before any input, is refused:
 * either way one of the names would be dropped. */
static int apply_force(struct cw_merge_input *in, int n, const char *spec, int at, int json)
{
	const char *eq = strrchr(spec, '=');
	int hit = -1;

	if (!eq) {
		if (!*spec) {
			cw_report_error(json, "merge: --force-node needs a node name");
			return -EINVAL;
		}
		if (at < 0) {
			cw_report_error(json,
					"merge: --force-node \"%s\" comes before any input; give it after the input"
					" it renames, or as --force-node INPUT=%s",
					spec, spec);
			return -EINVAL;
		}
		hit = at;
	} else if (!eq[1]) {
		cw_report_error(json, "merge: --force-node \"%s\" has no node name after '='", spec);
		return -EINVAL;
	}
	for (int i = 0; eq && i < n; i++) {
		struct stat a, b;
		char *p = strndup(spec, (size_t)(eq - spec));
		int same = p && (!strcmp(p, in[i].path) ||
				 (stat(p, &a) == 0 && stat(in[i].path, &b) == 0 && a.st_dev == b.st_dev &&
				  a.st_ino == b.st_ino));
		free(p);
		if (same) {
			hit = i;
			break;
		}
	}
	if (hit < 0) {
		cw_report_error(json, "merge: --force-node \"%s\" names no input of this merge", spec);
		return -EINVAL;
	}
	if (in[hit].relabel) {
		cw_report_error(json,
				"merge: \"%s\" is renamed twice (--force-node \"%s\" and \"%s\"); give each"
				" --force-node after its own input, or as --force-node INPUT=NAME",
				in[hit].path, in[hit].relabel, spec);
		return -EINVAL;
	}
	in[hit].relabel = eq ? eq + 1 : spec;
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	enum { OPT_FORCE_NODE = 256, OPT_FORCE };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force-node", required_argument, NULL, OPT_FORCE_NODE },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cw_merge_opts o = { 0 };
	struct cw_merge_result r;
	struct cw_merge_input *in = NULL;
	const char **forces = NULL;
	int *force_at = NULL;
	int nforces = 0, json = 0, c, ret, rc = CW_EXIT_OK;
	long long total = 0;
	sigset_t block, old;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	if (!(forces = calloc((size_t)argc, sizeof(*forces))) || !(force_at = calloc((size_t)argc, sizeof(*force_at))) ||
	    !(in = calloc((size_t)argc, sizeof(*in)))) {
		cw_report_error(json, "merge: out of memory");
		free(forces);
		free(force_at);
		return CW_EXIT_FAIL;
	}
	optind = 1;
	opterr = 0;
	/* In order ('-'): inputs and options may come in any order, and a bare
	 * --force-node NAME belongs to the input before it. */
	while ((c = cw_getopt(argc, argv, "-:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 1: {
			struct stat sb;

			in[o.ninputs++].path = optarg;
			if (stat(optarg, &sb) == 0)
				total += sb.st_size;
			break;
		}
		case 'o':
			o.out_path = optarg;
			break;
		case OPT_FORCE_NODE:
			force_at[nforces] = o.ninputs - 1;
			forces[nforces++] = optarg;
			break;
		case OPT_FORCE:
			o.overwrite = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			rc = CW_EXIT_OK;
			goto out;
		default:
			rc = cw_opt_error(json, "merge", c, argv);
			goto out;
		}
	}
	/* After "--", the rest are inputs. */
	for (int i = optind; i < argc; i++) {
		struct stat sb;
		in[o.ninputs++].path = argv[i];
		if (stat(argv[i], &sb) == 0)
			total += sb.st_size;
	}
	if (!o.ninputs) {
		cw_report_error(json, "merge: no input databases; see 'causeway merge --help'");
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (!o.out_path || !*o.out_path) {
		cw_report_error(json, "merge: no output; give -o OUT.db");
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (o.ninputs > CW_MERGE_MAX_INPUTS) {
		cw_report_error(json, "merge: at most %d inputs", CW_MERGE_MAX_INPUTS);
		rc = CW_EXIT_USAGE;
		goto out;
	}
	for (int i = 0; i < nforces; i++)
		if (apply_force(in, o.ninputs, forces[i], force_at[i], json)) {
			rc = CW_EXIT_USAGE;
			goto out;
		}
	o.inputs = in;
	if (total >= PROGRESS_BYTES || cw_verbose)
		o.progress = print_progress;
	/* SIGINT/SIGTERM are held while merging and polled by SQLite's
	 * progress handler, so an interrupted merge still removes its
	 * temporary file; the signal is delivered once that is done. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	o.cancelled = pending_stop;
	ret = cw_merge_run(&o, &r);
	if (ret) {
		cw_report_error(json, "merge: %s", ret == -EINTR ? "interrupted by a signal; nothing was written" : r.err);
		rc = ret == -EINVAL || ret == -EPERM || ret == -EISDIR ? CW_EXIT_USAGE
		     : ret == -EINTR || ret == -EEXIST ? CW_EXIT_FAIL : CW_EXIT_DB;
	} else {
		ret = json ? print_json(&o, &r) : print_text(&o, &r);
		if (ret)
			rc = CW_EXIT_FAIL;
	}
	cw_merge_result_free(&r);
	sigprocmask(SIG_SETMASK, &old, NULL);
out:
	free(forces);
	free(force_at);
	free(in);
	return rc;
}
