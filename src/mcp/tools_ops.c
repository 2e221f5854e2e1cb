/* Tools that do more than read the database: export, where (live stacks),
 * fleet fan-out and run_demo. Each calls the function its command calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "config/config.h"
#include "demo/build.h"
#include "demo/demo.h"
#include "export/perfetto.h"
#include "fleet/fanout.h"
#include "fleet/fanout_nccl.h"
#include "fleet/fetch.h"
#include "mcp/tools_int.h"
#include "store/store.h"
#include "util/atomic_file.h"
#include "util/timeutil.h"
#include "where/where.h"

/* Where export_timeline writes: mcp.export_dir, else ~/.causeway/exports
 * of the user the server runs as (the password entry's home before $HOME,
 * which sudo may keep from the caller). */
static int export_dir(char *dir, size_t len, char *err, size_t errlen)
{
	const struct cw_config *cfg = NULL;
	const char *home = NULL;
	struct passwd pwb, *pw = NULL;
	char buf[4096];

	if (!cw_config_get(&cfg, err, errlen) && cfg->mcp_export_dir) {
		snprintf(dir, len, "%s", cfg->mcp_export_dir);
		return 0;
	}
	if (!getpwuid_r(geteuid(), &pwb, buf, sizeof(buf), &pw) && pw)
		home = pw->pw_dir;
	if (!home || home[0] != '/')
		home = getenv("HOME");
	if (!home || home[0] != '/') {
		snprintf(err, errlen, "no export directory: set mcp.export_dir in the config");
		return -ENOENT;
	}
	snprintf(dir, len, "%s/.causeway/exports", home);
	return 0;
}

TOOL_FN(cw_tool_export_timeline)
{
	struct cw_export_opts o = { 0 };
	struct cw_export_stats s;
	struct cw_atomic_file af = { 0 };
	const char *path = tool_str(args, "path");
	/* Over MCP the path comes from a model that reads trace content, so
	 * it stays inside one directory and replaces nothing unasked. */
	const char *inputs[] = { c->cfg->db_path };
	struct cw_out_rule rule = { inputs, 1, tool_bool(args, "overwrite") ? CW_OUT_REPLACE : 0 };
	char dir[PATH_MAX], *written = NULL;
	FILE *f = NULL;
	sqlite3 *db;
	int rc;

	if (path && !c->cfg->allow_export_path) {
		snprintf(err, errlen, "this server does not write files over HTTP unless server.mcp_live_tools is set "
				      "in its config; call export_timeline without \"path\" for a summary, or run "
				      "`causeway export` on the host");
		return -EPERM;
	}
	if (path && (rc = export_dir(dir, sizeof(dir), err, errlen)))
		return rc;
	o.max_events = (uint64_t)tool_int(args, "max_events", 0);
	if ((rc = tool_open_db(c, &db, err, errlen)))
		return rc;
	if ((rc = tool_window(db, args, &o.from_wall_ns, &o.to_wall_ns, err, errlen)))
		goto out;
	if (path) {
		if (!(rc = cw_atomic_open_beneath(&af, dir, path, &rule, err, errlen)) &&
		    !(written = strdup(af.out.path))) {
			cw_atomic_close(&af, 0, NULL, 0);
			rc = -ENOMEM;
		}
	} else if (!(f = fopen("/dev/null", "we"))) {
		rc = -errno;
	}
	if (rc)
		goto out;
	cw_mcp_progress(c, 0, 1, "exporting");
	rc = cw_export_perfetto(db, &o, path ? af.f : f, &s, err, errlen);
	if (path) {
		int cr = cw_atomic_close(&af, !rc, rc ? NULL : err, rc ? 0 : errlen);

		if (!rc)
			rc = cr;
	} else {
		fclose(f);
	}
	if (rc) {
		if (cw_mcp_should_stop(c))
			rc = tool_stop_reason(c, rc, "export_timeline", err, errlen);
		goto out;
	}
	path = written;
	*out = json_pack("{s:o, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:i}, s:b}", "path",
			 path ? json_string(path) : json_null(), "from_wall_ns", (json_int_t)s.from_wall_ns,
			 "to_wall_ns", (json_int_t)s.to_wall_ns, "stats", "slices", (json_int_t)s.slices,
			 "offcpu", (json_int_t)s.offcpu, "io", (json_int_t)s.io, "counters",
			 (json_int_t)s.counters, "markers", (json_int_t)s.markers, "flows", (json_int_t)s.flows,
			 "in_window", (json_int_t)s.in_window, "nodes", s.nodes, "threads", s.threads,
			 "skew_applied", s.skew_applied, "truncated", s.cut_from_wall_ns != 0);
	strbuf_addf(text,
		    "%s%s%s: %d node%s, %d threads, %" PRIu64 " slices (%" PRIu64 " off-CPU, %" PRIu64
		    " I/O), %" PRIu64 " chain markers, %" PRIu64 " flows%s\n",
		    path ? "wrote \"" : "timeline (not written; give \"path\" to write it)", path ? path : "",
		    path ? "\" for ui.perfetto.dev" : "", s.nodes, s.nodes == 1 ? "" : "s", s.threads, s.slices,
		    s.offcpu, s.io, s.markers, s.flows,
		    s.cut_from_wall_ns ? "; older slices cut at max_events" : "");
out:
	free(written);
	tool_close_db(db);
	return rc;
}

TOOL_FN(cw_tool_where)
{
	int64_t pid = tool_int(args, "pid", 0);
	json_t *r = NULL, *t;
	size_t i;
	int rc;

	if (!c->cfg->allow_where) {
		snprintf(err, errlen, "where needs the server to run as root on the traced host; use stacks for "
				      "the stacks recorded in the trace instead");
		return -EPERM;
	}
	if ((rc = cw_mcp_may_ptrace(&c->cfg->caller, (long)pid, err, errlen)))
		return rc;
	rc = cw_where_collect((long)pid, tool_bool(args, "native"), &r, err, errlen);
	if (!r)
		return rc == -ESRCH ? -ESRCH : -EIO;
	json_array_foreach(json_object_get(r, "threads"), i, t) {
		json_t *py = json_object_get(t, "python"), *f;
		size_t k;

		strbuf_addf(text, "thread %" JSON_INTEGER_FORMAT "%s\n", json_integer_value(json_object_get(t, "tid")),
			    json_is_true(json_object_get(t, "main")) ? " (main)" : "");
		json_array_foreach(py, k, f)
			strbuf_addf(text, "  [py] %s:%" JSON_INTEGER_FORMAT " in %s\n",
				    json_string_value(json_object_get(f, "file")),
				    json_integer_value(json_object_get(f, "line")),
				    json_string_value(json_object_get(f, "function")));
		if (json_object_get(t, "native_unwinder"))
			strbuf_addf(text, "  native (%s):\n", json_string_value(json_object_get(t, "native_unwinder")));
		json_array_foreach(json_object_get(t, "native"), k, f) {
			if (k == 12) {
				strbuf_addf(text, "  ... %zu more native frames\n",
					    json_array_size(json_object_get(t, "native")) - 12);
				break;
			}
			strbuf_addf(text, "  %s\n", json_string_value(f));
		}
	}
	if (json_object_get(r, "python_error"))
		strbuf_addf(text, "python: %s\n", json_string_value(json_object_get(r, "python_error")));
	*out = r;
	return 0;
}

/* One chain as the fleet article prints it: "[HIGH] node | op p99=843us
 * (63.9x p50) | summary". */
static void chain_line(struct strbuf *text, json_t *ch)
{
	json_t *rc = json_object_get(ch, "root_cause");

	strbuf_addf(text, "[%s] %s | %s p99=%.0fus (%.1fx p50) | %s\n",
		    json_string_value(json_object_get(ch, "severity")) ?: "?",
		    json_string_value(json_object_get(ch, "node")) ?: "?",
		    json_string_value(json_object_get(ch, "op")) ?: "?",
		    (double)json_integer_value(json_object_get(ch, "p99_ns")) / 1e3,
		    json_number_value(json_object_get(ch, "tail_ratio")),
		    json_string_value(json_object_get(rc, "summary")) ?: json_string_value(json_object_get(rc, "kind")) ?: "");
}

static void add_warning(void *arg, const char *msg)
{
	cw_fleet_warning_add(arg, msg);
}

/* The fleet tool and its query_fleet alias. Actions: chains (alias
 * explain) the causal chains of every node, the NCCL arrival analysis
 * across them included; sql (alias query) one read-only SELECT on every
 * node; ops every node's operation breakdown; overview every node's event
 * counts by source. since narrows chains, ops and overview. Warnings (a
 * node down, clock skew) come first in the text. */
TOOL_FN(cw_tool_fleet)
{
	const char *action = tool_str(args, "action") ?: "chains", *since = tool_str(args, "since");
	struct cw_fleet_result fr = { 0 };
	struct strbuf body = STRBUF_INIT;
	json_t *merged = NULL, *w;
	uint64_t since_ns = 0;
	char q[128];
	size_t i;
	int rc;

	if (!c->cfg->fleet) {
		snprintf(err, errlen, "no fleet is configured: start `causeway mcp` with --nodes HOST:PORT,... or "
				      "--fleet (fleet.nodes in the config)");
		return -ENXIO;
	}
	if (!strcmp(action, "explain"))
		action = "chains";
	else if (!strcmp(action, "query"))
		action = "sql";
	if ((rc = tool_since(args, &since_ns, err, errlen)))
		return rc;
	/* Handed on in nanoseconds: nothing of the caller's text reaches
	 * the agents' query string. */
	if (since)
		snprintf(q, sizeof(q), "since=%lluns", (unsigned long long)since_ns);
	else
		q[0] = '\0';
	if (!strcmp(action, "sql")) {
		json_t *req;

		if (!tool_str(args, "sql")) {
			snprintf(err, errlen, "action \"sql\" needs \"sql\" (one read-only SELECT)");
			return -EINVAL;
		}
		req = json_pack("{s:s, s:I}", "sql", tool_str(args, "sql"), "max_rows",
				(json_int_t)tool_int(args, "max_rows", CW_MCP_DEFAULT_ROWS));
		rc = cw_fleet_query_req(c->cfg->fleet, req, &merged, &fr, err, errlen);
		json_decref(req);
	} else if (!strcmp(action, "overview")) {
		/* From the per-second aggregates: a count, not a scan. */
		json_t *req = json_pack("{s:s, s:[I]}", "sql",
					"SELECT source, sum(count) AS events, min(second) AS first_second,"
					" max(second) AS last_second FROM aggregates"
					" WHERE second > (SELECT max(second) FROM aggregates) - ?1 GROUP BY source ORDER BY source",
					"params", (json_int_t)(since_ns ? since_ns / 1000000000ULL : INT64_MAX / 2));

		rc = cw_fleet_query_req(c->cfg->fleet, req, &merged, &fr, err, errlen);
		json_decref(req);
	} else if (!strcmp(action, "ops")) {
		char path[192];

		snprintf(path, sizeof(path), "/api/v1/ops?by=op%s%s", since ? "&" : "", since ? q : "");
		rc = cw_fleet_fetch(c->cfg->fleet, path, NULL, &fr, err, errlen);
		if (rc == 0) {
			json_t *wa = json_array();

			for (int k = 0; k < fr.nwarnings; k++)
				cw_fleet_warning_add(wa, fr.warnings[k]);
			merged = cw_fleet_merge_ops(&fr, 0, 0, add_warning, wa);
			if (merged)
				json_object_set_new(merged, "warnings", wa);
			else
				json_decref(wa);
		}
	} else if (!strcmp(action, "chains")) {
		rc = cw_fleet_chains(c->cfg->fleet, since ? q : NULL, &merged, &fr, err, errlen);
		/* The NCCL rules need every agent's ranks at once. */
		if (rc == 0 && cw_fleet_nccl_chains(c->cfg->fleet, &fr, json_object_get(merged, "chains"), add_warning,
						    json_object_get(merged, "warnings"), err, errlen) < 0)
			cw_fleet_warning_add(json_object_get(merged, "warnings"), err);
		err[0] = '\0';
	} else {
		snprintf(err, errlen, "unknown action \"%s\" (chains, sql, ops or overview)", action);
		return -EINVAL;
	}
	if (rc) {
		if (!err[0] || rc == -EHOSTUNREACH)
			cw_fleet_none_answered(&fr, fr.n, err, errlen);
		cw_fleet_result_free(&fr);
		json_decref(merged);
		return rc;
	}
	if (!strcmp(action, "chains")) {
		json_t *chains = json_object_get(merged, "chains"), *ch;
		int64_t top = tool_int(args, "top_n", CW_MCP_DEFAULT_CHAINS);
		size_t total = json_array_size(chains);

		while ((int64_t)json_array_size(chains) > top)
			json_array_remove(chains, json_array_size(chains) - 1);
		json_object_set_new(merged, "total_chains", json_integer((json_int_t)total));
		json_object_set_new(merged, "truncated", json_boolean(total > json_array_size(chains)));
		strbuf_addf(&body, "Fleet Chains: %zu chain(s)\n", total);
		json_array_foreach(chains, i, ch)
			chain_line(&body, ch);
	} else {
		json_t *rows = json_object_get(merged, "rows"), *cols = json_object_get(merged, "columns");
		char *hs = json_dumps(cols, JSON_COMPACT);

		strbuf_addf(&body, "Fleet %s: %zu row(s) from %d of %d node(s)\n%s\n",
			    !strcmp(action, "ops") ? "Ops" : !strcmp(action, "overview") ? "Overview" : "SQL",
			    json_array_size(rows), fr.nok, fr.n, hs ? hs : "");
		free(hs);
		json_array_foreach(rows, i, w) {
			char *s = json_dumps(w, JSON_COMPACT);

			strbuf_addf(&body, "%s\n", s ? s : "?");
			free(s);
		}
	}
	json_array_foreach(json_object_get(merged, "warnings"), i, w)
		strbuf_addf(text, "warning: %s\n", json_string_value(w));
	strbuf_adds(text, strbuf_str(&body));
	strbuf_release(&body);
	json_object_set_new(merged, "action", json_string(action));
	json_object_set_new(merged, "nodes_asked", json_integer(fr.n));
	json_object_set_new(merged, "nodes_answered", json_integer(fr.nok));
	cw_fleet_result_free(&fr);
	*out = merged;
	return 0;
}

TOOL_FN(cw_tool_run_demo)
{
	struct cw_demo_opts o = { 0 };
	struct cw_demo_result res;
	struct cw_explain_result ex;
	int64_t top = tool_int(args, "top_n", CW_MCP_DEFAULT_CHAINS);
	char dir[] = "/tmp/causeway-mcp-demo-XXXXXX", db[64], cmdline[128];
	json_t *diag, *chains, *ch;
	size_t i;
	int rc;

	if (!c->cfg->allow_demo) {
		snprintf(err, errlen, "run_demo is disabled on this server");
		return -EPERM;
	}
	o.scenario = cw_demo_find(tool_str(args, "scenario") ?: CW_DEMO_DEFAULT_SCENARIO);
	if (!o.scenario) {
		snprintf(err, errlen, "unknown scenario; the inputSchema's enum lists them");
		return -EINVAL;
	}
	o.seed = (uint64_t)tool_int(args, "seed", 1);
	o.node = "demo-node";
	snprintf(cmdline, sizeof(cmdline), "causeway demo %s --seed %" PRIu64, o.scenario->name, o.seed);
	o.command = cmdline;
	if (!mkdtemp(dir)) {
		snprintf(err, errlen, "cannot create a temporary directory: %s", strerror(errno));
		return -errno;
	}
	snprintf(db, sizeof(db), "%s/demo.db", dir);
	cw_mcp_progress(c, 0, 1, "generating the scenario");
	rc = cw_demo_build(db, &o, 0, 0, &res, &ex, err, errlen);
	if (!c->cfg->demo_keep_db || rc) {
		/* Over HTTP the file is of no use to the caller: only the diagnosis
		 * leaves, and the server's disk does not fill up. */
		cw_store_remove_files(db);
		rmdir(dir);
	}
	if (rc)
		return -EIO;
	diag = cw_explain_to_json(&ex);
	chains = json_object_get(diag, "chains");
	while ((int64_t)json_array_size(chains) > top)
		json_array_remove(chains, json_array_size(chains) - 1);
	strbuf_addf(text, "demo \"%s\" (%s) written to %s: %" PRIu64 " events\n", o.scenario->name,
		    o.scenario->title, db, res.events + res.offcpu + res.snapshots);
	json_array_foreach(chains, i, ch)
		strbuf_addf(text, "[%s] %s: %s\n", json_string_value(json_object_get(ch, "severity")) ?: "?",
			    json_string_value(json_object_get(json_object_get(ch, "root_cause"), "kind")) ?: "?",
			    json_string_value(json_object_get(json_object_get(ch, "root_cause"), "summary")) ?: "");
	if (c->cfg->demo_keep_db)
		strbuf_addf(text, "inspect it with `causeway mcp --db %s` or `causeway explain --db %s`\n", db, db);
	*out = json_pack("{s:s, s:s, s:o, s:o, s:I, s:I, s:o, s:i, s:b}", "scenario", o.scenario->name, "title",
			 o.scenario->title, "expect", o.scenario->expect ? json_string(o.scenario->expect) : json_null(),
			 "db", c->cfg->demo_keep_db ? json_string(db) : json_null(), "events", (json_int_t)(res.events + res.offcpu + res.snapshots), "seed",
			 (json_int_t)o.seed, "diagnosis", diag, "total_chains", ex.count, "truncated",
			 ex.count > (int)json_array_size(chains));
	cw_explain_result_free(&ex);
	cw_mcp_progress(c, 1, 1, "done");
	return 0;
}
