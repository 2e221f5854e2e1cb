/* The tool machinery: schema-driven argument checks, the tools/call result
 * shape (structuredContent + a text rendering, isError for failures) and
 * progress. The tools themselves are in tools_*.c, listed in the table of
 * tools_table.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo/demo.h"
#include "mcp/mcp.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/utf8.h"

const struct cw_mcp_tool *cw_mcp_tool_find(const char *name)
{
	size_t n;
	const struct cw_mcp_tool *t = cw_mcp_tools(&n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

int cw_mcp_tool_live(const struct cw_mcp_tool *t)
{
	/* where reads (and, with native, pauses) any process; run_demo writes
	 * databases. export_timeline without a path only reads, so it stays,
	 * and refuses its path itself (allow_export_path). */
	return !strcmp(t->name, "where") || !strcmp(t->name, "run_demo");
}

json_t *cw_mcp_input_schema(const struct cw_mcp_tool *t)
{
	json_t *in = json_loads(t->input_schema, 0, NULL);
	json_t *en = json_object_get(json_object_get(json_object_get(in, "properties"), "scenario"), "enum");

	/* run_demo's scenarios: whatever the demo table holds, never a copy. */
	if (en && !strcmp(t->name, "run_demo")) {
		const struct cw_demo_scenario *const *sc;
		size_t n, i;

		sc = cw_demo_scenarios(&n);
		for (i = 0; i < n; i++)
			json_array_append_new(en, json_string(sc[i]->name));
	}
	return in;
}

json_t *cw_mcp_tool_json(const struct cw_mcp_tool *t)
{
	json_t *in = cw_mcp_input_schema(t), *out = json_loads(t->output_schema, 0, NULL);

	if (!in || !out) {
		json_decref(in);
		json_decref(out);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name", t->name, "title",
			 t->title, "description", t->description, "inputSchema", in, "outputSchema", out,
			 "annotations", "title", t->title, "readOnlyHint", t->read_only, "destructiveHint", 0,
			 "idempotentHint", t->read_only, "openWorldHint", 0);
}

static int type_ok(json_t *v, const char *type)
{
	if (!strcmp(type, "string"))
		return json_is_string(v);
	if (!strcmp(type, "integer"))
		return json_is_integer(v) || (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
					      fabs(json_real_value(v)) < 9e15);
	if (!strcmp(type, "number"))
		return json_is_number(v);
	if (!strcmp(type, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(type, "array"))
		return json_is_array(v);
	if (!strcmp(type, "object"))
		return json_is_object(v);
	return 1;
}

static const char *a_or_an(const char *type)
{
	return strchr("aeiou", type[0]) ? "an" : "a";
}

int cw_mcp_check_args(const struct cw_mcp_tool *t, json_t *args, char *err, size_t errlen)
{
	json_t *schema = cw_mcp_input_schema(t), *props, *req, *v, *p;
	const char *k;
	size_t i;
	int rc = -EINVAL;

	if (!schema) {
		snprintf(err, errlen, "internal error: the schema of \"%s\" does not parse", t->name);
		return -EIO;
	}
	props = json_object_get(schema, "properties");
	if (args && !json_is_object(args)) {
		snprintf(err, errlen, "arguments must be a JSON object (see the tool's inputSchema)");
		goto out;
	}
	json_object_foreach(args, k, v) {
		const char *type;
		json_t *en;

		p = json_object_get(props, k);
		if (!p) {
			struct strbuf sb;

			strbuf_init(&sb, 512);
			json_object_foreach(props, k, v) strbuf_addf(&sb, "%s%s", sb.len ? ", " : "", k);
			/* k was reused by the loop: re-find the unknown key. */
			json_object_foreach(args, k, v) if (!json_object_get(props, k)) break;
			snprintf(err, errlen, "unknown argument \"%.64s\"; \"%s\" takes: %s", k, t->name,
				 sb.len ? strbuf_str(&sb) : "no arguments");
			strbuf_release(&sb);
			goto out;
		}
		type = json_string_value(json_object_get(p, "type"));
		if (type && !type_ok(v, type)) {
			snprintf(err, errlen, "argument \"%s\" must be %s %s", k, a_or_an(type), type);
			goto out;
		}
		if ((en = json_object_get(p, "enum"))) {
			json_t *e;
			int found = 0;

			json_array_foreach(en, i, e) found |= json_equal(e, v);
			if (!found) {
				char *list = json_dumps(en, JSON_COMPACT);

				snprintf(err, errlen, "argument \"%s\" must be one of %s", k, list ? list : "the enum");
				free(list);
				goto out;
			}
		}
		if (json_is_number(v)) {
			json_t *mn = json_object_get(p, "minimum"), *mx = json_object_get(p, "maximum");
			double d = json_number_value(v);

			if ((mn && d < json_number_value(mn)) || (mx && d > json_number_value(mx))) {
				snprintf(err, errlen, "argument \"%s\" must be between %g and %g", k,
					 mn ? json_number_value(mn) : -INFINITY, mx ? json_number_value(mx) : INFINITY);
				goto out;
			}
		}
		if (json_is_string(v)) {
			json_t *ml = json_object_get(p, "maxLength");

			if (json_string_length(v) != strlen(json_string_value(v))) {
				snprintf(err, errlen, "argument \"%s\" contains a NUL byte", k);
				goto out;
			}
			if (ml && json_string_length(v) > (size_t)json_integer_value(ml)) {
				snprintf(err, errlen, "argument \"%s\" is longer than %lld characters", k,
					 (long long)json_integer_value(ml));
				goto out;
			}
		}
	}
	req = json_object_get(schema, "required");
	json_array_foreach(req, i, v) {
		if (!json_object_get(args, json_string_value(v))) {
			snprintf(err, errlen, "missing required argument \"%s\"", json_string_value(v));
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(schema);
	return rc;
}

/* A text block cut at CW_MCP_MAX_TEXT on a line boundary, saying so. */
static json_t *text_block(struct strbuf *text)
{
	const char *s = strbuf_str(text);
	size_t n = text->len;
	struct strbuf cut;
	json_t *j;

	if (!text->overflow && n <= CW_MCP_MAX_TEXT)
		return json_pack("{s:s, s:o}", "type", "text", "text", cw_json_str(n ? s : "(empty)"));
	if (n > CW_MCP_MAX_TEXT)
		n = CW_MCP_MAX_TEXT;
	if (memrchr(s, '\n', n))
		n = (size_t)((const char *)memrchr(s, '\n', n) - s);
	strbuf_init(&cut, CW_MCP_MAX_TEXT + 128);
	strbuf_add(&cut, s, n);
	strbuf_adds(&cut, "\n(text cut; the structured result has the rest)");
	j = json_pack("{s:s, s:o}", "type", "text", "text", cw_json_str(strbuf_str(&cut)));
	strbuf_release(&cut);
	return j;
}

json_t *cw_mcp_tool_call(struct cw_mcp_call *c, const struct cw_mcp_tool *t, json_t *args)
{
	struct strbuf text;
	json_t *out = NULL, *res, *empty;
	char err[1024] = "";
	int rc;

	rc = cw_mcp_check_args(t, args, err, sizeof(err));
	if (rc)
		goto fail;
	strbuf_init(&text, CW_MCP_MAX_TEXT + 4096);
	empty = args ? NULL : json_object();
	rc = t->fn(c, args ? args : empty, &out, &text, err, sizeof(err));
	json_decref(empty);
	if (rc) {
		strbuf_release(&text);
		json_decref(out);
		goto fail;
	}
	res = json_pack("{s:[o], s:o, s:b}", "content", text_block(&text), "structuredContent",
			out ? out : json_object(), "isError", 0);
	strbuf_release(&text);
	return res;
fail:
	if (!err[0])
		snprintf(err, sizeof(err), "%s failed: %s", t->name, strerror(-rc));
	return json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text", cw_json_str(err), "isError", 1);
}

int cw_mcp_should_stop(struct cw_mcp_call *c)
{
	return atomic_load(&c->cancelled) || cw_monotonic_ns() > c->deadline_ns;
}

int cw_mcp_progress(struct cw_mcp_call *c, double progress, double total, const char *message)
{
	json_t *p;

	/* Progress must increase with every notification. */
	if (c->progress_token && c->notify && progress > c->progress_last) {
		p = json_pack("{s:O, s:f}", "progressToken", c->progress_token, "progress", progress);
		if (total > 0)
			json_object_set_new(p, "total", json_real(total));
		if (message)
			json_object_set_new(p, "message", cw_json_str(message));
		c->notify(c->notify_arg, cw_jsonrpc_notification("notifications/progress", p));
		c->progress_last = progress;
	}
	return cw_mcp_should_stop(c);
}
