/* Prompts (investigate, fleet_triage) and resources (causeway://schema and
 * causeway://rules, the docs embedded at build time). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "util/strbuf.h"

extern const char cw_mcp_schema_md[];
extern const char cw_mcp_rules_md[];

static const struct {
	const char *uri, *name, *title, *description;
	const char *text;
} resources[] = {
	{ "causeway://schema", "schema", "causeway database schema",
	  "Tables and columns of a causeway trace database (docs/schema.md): what run_sql can read.",
	  cw_mcp_schema_md },
	{ "causeway://rules", "rules", "causeway detection rules",
	  "Every root-cause rule explain applies, with thresholds and the evidence it reports "
	  "(docs/rules.md).",
	  cw_mcp_rules_md },
};

#define NRES (sizeof(resources) / sizeof(resources[0]))

json_t *cw_mcp_resources_list(void)
{
	json_t *a = json_array();

	for (size_t i = 0; i < NRES; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "uri", resources[i].uri, "name",
						   resources[i].name, "title", resources[i].title, "description",
						   resources[i].description, "mimeType", "text/markdown", "size",
						   (json_int_t)strlen(resources[i].text)));
	return json_pack("{s:o}", "resources", a);
}

json_t *cw_mcp_resource_read(json_t *params, int *code, char *err, size_t errlen)
{
	const char *uri = json_string_value(json_object_get(params, "uri"));

	for (size_t i = 0; uri && i < NRES; i++)
		if (!strcmp(uri, resources[i].uri))
			return json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType", "text/markdown",
					 "text", resources[i].text);
	/* MCP's code for an unknown resource. */
	*code = uri ? -32002 : CW_JSONRPC_INVALID_PARAMS;
	snprintf(err, errlen, uri ? "resource not found: \"%.200s\" (resources/list names them)"
				  : "resources/read needs params.uri",
		 uri);
	return NULL;
}

static const char investigate_text[] =
	"Investigate a GPU performance problem with causeway%s%s.\n\n"
	"Procedure:\n"
	"1. Call causal_chains%s. Each chain names a root cause (root_cause.kind), the op, its p50/p99 "
	"latency in ns, the share of slow-call time the cause explains, the process and Python line, and "
	"fixes.\n"
	"2. If there are no chains, call trace_summary to see where time goes (largest total_ns first) and "
	"say that no tail was found.\n"
	"3. For the most severe chain, call explain_call with its slowest_call_id to see the thread's "
	"timeline around one slow call (off-CPU intervals and who held the CPU), and stacks with its op "
	"(and pid) to see the code path.\n"
	"4. Use run_sql only for questions the tools above do not answer; read causeway://schema first.\n"
	"5. Answer with: the cause, the evidence (quote the exact numbers from the results, with units: "
	"convert ns to ms or us yourself and say so), the Python file:line, and the fix from the chain.\n\n"
	"Rules: cite only numbers that appear in tool results; never estimate or invent a figure. If a "
	"result says truncated, say so or narrow the query. If a tool returns an error, fix the call as "
	"the message says.";

static const char fleet_text[] =
	"Triage a multi-node GPU job with causeway%s%s.\n\n"
	"Procedure:\n"
	"1. Call fleet with action \"explain\"%s. Note every warning: a node that did not answer is "
	"unknown, not healthy.\n"
	"2. Find the node or rank whose chains are most severe; a straggler chain names the slow rank "
	"directly. Compare p99_ns of the same op across nodes.\n"
	"3. Call fleet with action \"query\" and SQL such as \"SELECT op, count(*) AS n, "
	"max(duration_ns) AS max_ns FROM events GROUP BY op ORDER BY max_ns DESC LIMIT 10\" to compare "
	"nodes on one op.\n"
	"4. Answer: which node/rank is slow, why (the chain's root cause with its quoted numbers), which "
	"nodes are fine, which did not answer, and the fix.\n\n"
	"Rules: cite only numbers that appear in tool results; never estimate or invent a figure.";

json_t *cw_mcp_prompts_list(void)
{
	return json_pack(
		"{s:[{s:s, s:s, s:s, s:[{s:s, s:s, s:b}, {s:s, s:s, s:b}]}, {s:s, s:s, s:s, s:[{s:s, s:s, s:b}]}]}",
		"prompts", "name", "investigate", "title", "Investigate a slowdown", "description",
		"Step-by-step diagnosis of a slow GPU job from this node's trace, citing numbers from tool "
		"results",
		"arguments", "name", "question", "description", "what is slow, e.g. \"why is rank 3 slow?\"", "required",
		0, "name", "since", "description", "window, e.g. 10m (default: all data)", "required", 0, "name",
		"fleet_triage", "title", "Triage a fleet", "description",
		"Find the slow node or rank of a multi-node job across the configured fleet", "arguments", "name",
		"since", "description", "window on each node, e.g. 10m", "required", 0);
}

json_t *cw_mcp_prompt_get(json_t *params, int *code, char *err, size_t errlen)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments"), *v;
	const char *q, *since, *k;
	char *text = NULL, win[96] = "";
	json_t *res;
	int rc;

	*code = CW_JSONRPC_INVALID_PARAMS;
	if (!name) {
		snprintf(err, errlen, "prompts/get needs params.name (investigate or fleet_triage)");
		return NULL;
	}
	if (strcmp(name, "investigate") && strcmp(name, "fleet_triage")) {
		snprintf(err, errlen, "unknown prompt \"%.100s\"; prompts/list names them", name);
		return NULL;
	}
	if (args && !json_is_object(args)) {
		snprintf(err, errlen, "params.arguments must be an object of strings");
		return NULL;
	}
	json_object_foreach(args, k, v) {
		if (!json_is_string(v) || json_string_length(v) > 1000 ||
		    (strcmp(k, "since") && (strcmp(k, "question") || strcmp(name, "investigate")))) {
			snprintf(err, errlen, "prompt \"%s\" takes %s as strings of at most 1000 characters", name,
				 strcmp(name, "investigate") ? "since" : "question and since");
			return NULL;
		}
	}
	q = json_string_value(json_object_get(args, "question"));
	since = json_string_value(json_object_get(args, "since"));
	if (since)
		snprintf(win, sizeof(win), " with since \"%.64s\"", since);
	if (strcmp(name, "investigate"))
		rc = asprintf(&text, fleet_text, "", "", win);
	else
		rc = asprintf(&text, investigate_text, q ? ": " : "", q ? q : "", win);
	if (rc < 0) {
		*code = CW_JSONRPC_INTERNAL_ERROR;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	res = json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}]}", "description",
			strcmp(name, "investigate") ? "Triage a fleet" : "Investigate a slowdown", "messages", "role",
			"user", "content", "type", "text", "text", text);
	free(text);
	return res;
}
