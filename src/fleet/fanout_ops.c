/* The ops summaries of every agent (/api/v1/ops) as one row set, for
 * query --nodes and the MCP fleet tool. */
#include <stdio.h>

#include "fleet/fanout.h"
#include "util/utf8.h"

/* The ops summary of every node as one row set with a leading node column. */
json_t *cw_fleet_merge_ops(const struct cw_fleet_result *r, int by_line, int per_tenant,
			   void (*warn)(void *arg, const char *msg), void *warn_arg)
{
	static const char *const base[] = { "count", "p50_ns", "p95_ns", "p99_ns",
					    "max_ns", "total_ns", "wall_share" };
	json_t *cols = json_array(), *rows = json_array(), *ops, *op;
	size_t k;

	json_array_append_new(cols, json_string("node"));
	json_array_append_new(cols, json_string("source"));
	json_array_append_new(cols, json_string("op"));
	if (by_line) {
		json_array_append_new(cols, json_string("file"));
		json_array_append_new(cols, json_string("line"));
		json_array_append_new(cols, json_string("function"));
	}
	if (per_tenant)
		json_array_append_new(cols, json_string("tenant"));
	for (k = 0; k < sizeof(base) / sizeof(base[0]); k++)
		json_array_append_new(cols, json_string(base[k]));
	for (int i = 0; i < r->n; i++) {
		size_t j;

		if (!r->nodes[i].ok)
			continue;
		ops = json_object_get(r->nodes[i].body, "ops");
		if (!json_is_array(ops)) {
			char msg[400];

			snprintf(msg, sizeof(msg), "node \"%s\": malformed ops answer, ignored", r->nodes[i].addr);
			if (warn)
				warn(warn_arg, msg);
			continue;
		}
		json_array_foreach(ops, j, op) {
			json_t *row = json_array();

			json_array_append_new(row, cw_json_str(r->nodes[i].name));
			json_array_append(row, json_object_get(op, "source") ?: json_null());
			json_array_append(row, json_object_get(op, "op") ?: json_null());
			if (by_line) {
				json_array_append(row, json_object_get(op, "file") ?: json_null());
				json_array_append(row, json_object_get(op, "line") ?: json_null());
				json_array_append(row, json_object_get(op, "function") ?: json_null());
			}
			if (per_tenant)
				json_array_append(row, json_object_get(op, "tenant") ?: json_null());
			for (k = 0; k < sizeof(base) / sizeof(base[0]); k++)
				json_array_append(row, json_object_get(op, base[k]) ?: json_null());
			json_array_append_new(rows, row);
		}
	}
	return json_pack("{s:o, s:o}", "columns", cols, "rows", rows);
}

