/* nccl_ranks: the table of `explain --ranks` (per rank: collectives
 * entered, late arrivals and their lag, last sequence number, share of the
 * step spent waiting, straggler, missing from a hang), from the same
 * function explain calls (cw_nccl_ranks_json, analysis/rules/nccl_chains.c)
 * over the same window (cw_explain_window). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/explain.h"
#include "mcp/tools_int.h"
#include "util/timeutil.h"

static void text_row(struct strbuf *text, json_t *r)
{
	json_t *rk = json_object_get(r, "rank");
	char lag[32];

	cw_format_duration((uint64_t)json_integer_value(json_object_get(r, "mean_lag_ns")), lag, sizeof(lag));
	if (json_is_integer(rk))
		strbuf_addf(text, "rank %lld", (long long)json_integer_value(rk));
	else
		strbuf_adds(text, "rank ?");
	strbuf_addf(text, " on %s pid %lld: %lld collectives, %lld late (mean lag %s), last seq %lld, %.0f%% of the "
			  "step waiting%s\n",
		    json_string_value(json_object_get(r, "node")), (long long)json_integer_value(json_object_get(r, "pid")),
		    (long long)json_integer_value(json_object_get(r, "collectives")),
		    (long long)json_integer_value(json_object_get(r, "late")), lag,
		    (long long)json_integer_value(json_object_get(r, "last_seq")),
		    100 * json_real_value(json_object_get(r, "comm_wait_share")),
		    json_is_true(json_object_get(r, "straggler"))  ? " [straggler]"
		    : json_is_true(json_object_get(r, "missing")) ? " [missing: the others wait for it]"
								   : "");
}

TOOL_FN(cw_tool_nccl_ranks)
{
	struct cw_explain_opts o = { 0 };
	int64_t limit = tool_int(args, "limit", 64);
	json_t *rows, *kept, *r, *straggler = json_null(), *missing;
	uint64_t from = 0, to = 0;
	sqlite3 *db;
	size_t i, n;
	int rc;

	if ((rc = tool_duration(args, "hang_after", &o.hang_min_ns, err, errlen)))
		return rc;
	o.node_filter = tool_str(args, "node");
	if ((rc = tool_open_db(c, &db, err, errlen)))
		return rc;
	if (!(rc = tool_window(db, args, &o.from_wall_ns, &o.to_wall_ns, err, errlen)))
		rc = cw_explain_window(db, &o, &from, &to);
	if (rc) {
		tool_close_db(db);
		return rc == -EINVAL ? rc : tool_stop_reason(c, rc, "nccl_ranks", err, errlen);
	}
	rows = cw_nccl_ranks_json(db, &o, from, to);
	tool_close_db(db);
	if (!rows)
		return tool_stop_reason(c, -EIO, "nccl_ranks", err, errlen);
	n = json_array_size(rows);
	kept = json_array();
	missing = json_array();
	json_array_foreach(rows, i, r) {
		json_t *rk = json_object_get(r, "rank");

		if (json_is_true(json_object_get(r, "straggler")))
			straggler = json_deep_copy(rk);
		if (json_is_true(json_object_get(r, "missing")))
			json_array_append(missing, rk);
		if (i < (size_t)limit) {
			json_array_append(kept, r);
			text_row(text, r);
		}
	}
	if (json_is_integer(straggler))
		strbuf_addf(text, "straggler: rank %lld, every other rank waits for it\n",
			    (long long)json_integer_value(straggler));
	json_array_foreach(missing, i, r)
		strbuf_addf(text, "hang: the other ranks wait for rank %lld past the hang threshold\n",
			    (long long)json_integer_value(r));
	if (!n)
		strbuf_adds(text, "no NCCL collectives recorded in the window\n");
	else if ((size_t)limit < n)
		strbuf_addf(text, "(%lld of %zu ranks; raise limit for more)\n", (long long)limit, n);
	*out = json_pack("{s:s, s:{s:I, s:I}, s:o, s:I, s:I, s:o, s:o, s:b, s:b}", "node", c->cfg->node, "window",
			 "from_wall_ns", (json_int_t)from, "to_wall_ns", (json_int_t)to, "ranks", kept, "rank_count",
			 (json_int_t)json_array_size(kept), "total_ranks", (json_int_t)n, "straggler_rank", straggler,
			 "missing_ranks", missing, "hang", json_array_size(missing) > 0, "truncated", (size_t)limit < n);
	json_decref(rows);
	return *out ? 0 : -ENOMEM;
}
