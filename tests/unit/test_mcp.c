/* mcp/: JSON-RPC envelopes and error codes, version negotiation, the
 * handshake, the tool table's schemas and argument checks, prompts and
 * resources, and tools answering from a demo database the same objects
 * explain and query compute. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "cmd/cmd.h"
#include "demo/build.h"
#include "demo/demo.h"
#include "mcp/mcp.h"
#include "server/internal.h"
#include "store/store.h"
#include "analysis/summary.h"

static char dir[] = "/tmp/cw-test-mcp-XXXXXX";
static char db[128];
static struct cw_mcp_config cfg;

static int setup(void **state)
{
	struct cw_demo_opts o = { 0 };
	struct cw_demo_result res;
	struct cw_explain_result ex;
	char err[512];

	if (!mkdtemp(dir))
		return -1;
	snprintf(db, sizeof(db), "%s/d.db", dir);
	o.scenario = cw_demo_find("incident");
	o.seed = 1;
	o.node = "demo-node";
	if (cw_demo_build(db, &o, 0, 0, &res, &ex, err, sizeof(err)) != CW_EXIT_OK) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	cw_explain_result_free(&ex);
	cfg.db_path = db;
	cfg.node = "test-node";
	cfg.transport = "test";
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Sends text, returns the answer (NULL for none). */
static json_t *rpc(struct cw_mcp_session *s, const char *text, enum cw_mcp_kind *kind)
{
	enum cw_mcp_kind k;

	return cw_mcp_handle(&cfg, s, text, strlen(text), NULL, NULL, kind ? kind : &k, NULL);
}

static int err_code(json_t *r)
{
	return (int)json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

static void init_session(struct cw_mcp_session *s, const char *version)
{
	char buf[256];
	json_t *r;

	cw_mcp_session_init(s);
	snprintf(buf, sizeof(buf),
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
		 "\"capabilities\":{},\"clientInfo\":{\"name\":\"unit\",\"version\":\"1\"}}}",
		 version);
	r = rpc(s, buf, NULL);
	assert_non_null(json_object_get(r, "result"));
	json_decref(r);
	assert_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL));
}

static void test_envelope_errors(void **state)
{
	struct cw_mcp_session s;
	enum cw_mcp_kind k;
	json_t *r;

	init_session(&s, "2025-11-25");
	r = rpc(&s, "{not json", &k);
	assert_int_equal(err_code(r), CW_JSONRPC_PARSE_ERROR);
	assert_true(json_is_null(json_object_get(r, "id")));
	json_decref(r);
	r = rpc(&s, "{\"id\":7,\"method\":\"ping\"}", &k);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_REQUEST);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 7);
	assert_int_equal(k, CW_MCP_KIND_INVALID);
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", &k);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_REQUEST);
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":3}", &k);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_REQUEST);
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"no/such\"}", &k);
	assert_int_equal(err_code(r), CW_JSONRPC_METHOD_NOT_FOUND);
	assert_string_equal(json_string_value(json_object_get(r, "id")), "a");
	json_decref(r);
	/* Duplicate keys are ambiguous: a parse error. */
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", &k);
	assert_int_equal(err_code(r), CW_JSONRPC_PARSE_ERROR);
	json_decref(r);
	/* A response from the client, and a notification: no answer. */
	assert_null(rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}", &k));
	assert_int_equal(k, CW_MCP_KIND_RESPONSE);
	assert_null(rpc(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}", &k));
	assert_int_equal(k, CW_MCP_KIND_NOTIFICATION);
	cw_mcp_session_destroy(&s);
}

static void test_versions_and_handshake(void **state)
{
	static const char *const cases[][2] = {
		{ "2025-11-25", "2025-11-25" },
		{ "2025-06-18", "2025-06-18" },
		{ "2025-03-26", "2025-03-26" },
		{ "2024-11-05", CW_MCP_PROTOCOL_LATEST },
		{ "1999-01-01", CW_MCP_PROTOCOL_LATEST },
	};
	struct cw_mcp_session s;
	json_t *r, *res;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[256];

		cw_mcp_session_init(&s);
		snprintf(buf, sizeof(buf),
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
			 "\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"u\",\"version\":\"1\"}}}",
			 cases[i][0]);
		r = rpc(&s, buf, NULL);
		res = json_object_get(r, "result");
		assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), cases[i][1]);
		assert_string_equal(json_string_value(json_object_get(json_object_get(res, "serverInfo"), "name")),
				    "causeway");
		assert_non_null(json_object_get(json_object_get(res, "capabilities"), "tools"));
		json_decref(r);
		cw_mcp_session_destroy(&s);
	}
	/* Before initialize: ping is fine, anything else is refused. */
	cw_mcp_session_init(&s);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL);
	assert_true(json_is_object(json_object_get(r, "result")));
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_REQUEST);
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{}}", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_PARAMS);
	json_decref(r);
	cw_mcp_session_destroy(&s);
}

static void test_batches(void **state)
{
	struct cw_mcp_session s;
	json_t *r;

	init_session(&s, "2025-06-18");
	r = rpc(&s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_REQUEST);
	json_decref(r);
	cw_mcp_session_destroy(&s);
	init_session(&s, "2025-03-26");
	r = rpc(&s,
		 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"method\":\"n\"},"
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}]",
		 NULL);
	assert_true(json_is_array(r));
	assert_int_equal(json_array_size(r), 2);
	assert_int_equal(err_code(json_array_get(r, 1)), CW_JSONRPC_METHOD_NOT_FOUND);
	json_decref(r);
	r = rpc(&s, "[]", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_REQUEST);
	json_decref(r);
	cw_mcp_session_destroy(&s);
}

static void test_tool_table(void **state)
{
	size_t n, i, j;
	const struct cw_mcp_tool *t = cw_mcp_tools(&n);
	struct cw_mcp_session s;
	json_t *r, *tools;

	assert_true(n >= 10);
	for (i = 0; i < n; i++) {
		json_t *tj = cw_mcp_tool_json(&t[i]);

		/* Every schema parses and is an object schema. */
		assert_non_null(tj);
		assert_string_equal(json_string_value(json_object_get(json_object_get(tj, "inputSchema"), "type")),
				    "object");
		assert_string_equal(json_string_value(json_object_get(json_object_get(tj, "outputSchema"), "type")),
				    "object");
		assert_true(strlen(t[i].description) > 80);
		json_decref(tj);
		for (j = i + 1; j < n; j++)
			assert_string_not_equal(t[i].name, t[j].name);
	}
	init_session(&s, "2025-11-25");
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", NULL);
	tools = json_object_get(json_object_get(r, "result"), "tools");
	assert_int_equal(json_array_size(tools), n);
	json_decref(r);
	cw_mcp_session_destroy(&s);
}

/* run_demo's enum is the demo's scenario table, name for name. */
static void test_demo_enum(void **state)
{
	const struct cw_mcp_tool *t = cw_mcp_tool_find("run_demo");
	json_t *sch = cw_mcp_input_schema(t), *en;
	const struct cw_demo_scenario *const *sc;
	size_t n, i;

	en = json_object_get(json_object_get(json_object_get(sch, "properties"), "scenario"), "enum");
	sc = cw_demo_scenarios(&n);
	assert_int_equal(json_array_size(en), n);
	for (i = 0; i < n; i++)
		assert_string_equal(json_string_value(json_array_get(en, i)), sc[i]->name);
	json_decref(sch);
}

static void test_check_args(void **state)
{
	const struct cw_mcp_tool *t = cw_mcp_tool_find("causal_chains"), *sql = cw_mcp_tool_find("run_sql");
	char err[512];
	json_t *a;

	assert_non_null(t);
	a = json_pack("{s:i}", "top_n", 5);
	assert_int_equal(cw_mcp_check_args(t, a, err, sizeof(err)), 0);
	json_decref(a);
	assert_int_equal(cw_mcp_check_args(t, NULL, err, sizeof(err)), 0);
	a = json_pack("{s:i}", "top_n", 0);
	assert_int_equal(cw_mcp_check_args(t, a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "between 1 and 100"));
	json_decref(a);
	a = json_pack("{s:i}", "top_n", 101);
	assert_int_equal(cw_mcp_check_args(t, a, err, sizeof(err)), -EINVAL);
	json_decref(a);
	a = json_pack("{s:s}", "top_n", "5");
	assert_int_equal(cw_mcp_check_args(t, a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "must be an integer"));
	json_decref(a);
	a = json_pack("{s:i}", "bogus", 1);
	assert_int_equal(cw_mcp_check_args(t, a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown argument \"bogus\""));
	assert_non_null(strstr(err, "top_n"));
	json_decref(a);
	a = json_object();
	assert_int_equal(cw_mcp_check_args(sql, a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "missing required argument \"sql\""));
	json_decref(a);
	a = json_pack("{s:s}", "scenario", "nope");
	assert_int_equal(cw_mcp_check_args(cw_mcp_tool_find("run_demo"), a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "must be one of"));
	json_decref(a);
	a = json_array();
	assert_int_equal(cw_mcp_check_args(t, a, err, sizeof(err)), -EINVAL);
	json_decref(a);
}

static json_t *call(struct cw_mcp_session *s, const char *name, const char *args)
{
	char buf[4096];
	json_t *r, *res;

	snprintf(buf, sizeof(buf),
		 "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
		 "\"arguments\":%s}}",
		 name, args);
	r = rpc(s, buf, NULL);
	res = json_incref(json_object_get(r, "result"));
	json_decref(r);
	return res;
}

static void test_tools_call_errors(void **state)
{
	struct cw_mcp_session s;
	json_t *r;

	init_session(&s, "2025-11-25");
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_PARAMS);
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_PARAMS);
	json_decref(r);
	/* Bad arguments are a tool result with isError, saying how to fix it. */
	r = call(&s, "causal_chains", "{\"since\":\"5 parsecs\"}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0),
								 "text")),
			       "invalid duration \"5 parsecs\" (e.g. 30s, 5m, 2h)"));
	json_decref(r);
	r = call(&s, "run_sql", "{\"sql\":\"DROP TABLE events\"}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
	r = call(&s, "explain_call", "{\"id\":999999999}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
	/* where without root (cfg.allow_where is 0 here). */
	r = call(&s, "where", "{\"pid\":1}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
	r = call(&s, "fleet", "{\"action\":\"explain\"}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
	cw_mcp_session_destroy(&s);
}

static void test_chains_match_explain(void **state)
{
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result ex;
	struct cw_store *st;
	struct cw_mcp_session s;
	char err[256];
	json_t *want, *r, *got, *c0;

	assert_int_equal(cw_store_open(&st, db, CW_STORE_READONLY, err, sizeof(err)), 0);
	assert_int_equal(cw_explain_run(st->db, &o, &ex), 0);
	want = cw_explain_to_json(&ex);
	cw_explain_result_free(&ex);
	cw_store_close(st);
	assert_true(json_array_size(json_object_get(want, "chains")) >= 1);

	init_session(&s, "2025-11-25");
	r = call(&s, "causal_chains", "{\"top_n\":1}");
	assert_false(json_is_true(json_object_get(r, "isError")));
	got = json_object_get(r, "structuredContent");
	assert_int_equal(json_array_size(json_object_get(got, "chains")), 1);
	assert_int_equal(json_integer_value(json_object_get(got, "total_chains")),
			 json_array_size(json_object_get(want, "chains")));
	assert_int_equal(json_is_true(json_object_get(got, "truncated")),
			 json_array_size(json_object_get(want, "chains")) > 1);
	c0 = json_deep_copy(json_array_get(json_object_get(got, "chains"), 0));
	/* The tool adds drill-down ids; everything else is explain's object. */
	assert_true(json_integer_value(json_object_get(c0, "slowest_call_id")) > 0);
	json_object_del(c0, "slowest_call_id");
	json_object_del(c0, "chain_index");
	assert_true(json_equal(c0, json_array_get(json_object_get(want, "chains"), 0)));
	json_decref(c0);
	/* Drill down into the slowest call. */
	{
		char a[64];
		json_t *d;

		snprintf(a, sizeof(a), "{\"id\":%lld}",
			 (long long)json_integer_value(json_object_get(
				 json_array_get(json_object_get(got, "chains"), 0), "slowest_call_id")));
		d = call(&s, "explain_call", a);
		assert_false(json_is_true(json_object_get(d, "isError")));
		assert_string_equal(
			json_string_value(json_object_get(
				json_object_get(json_object_get(d, "structuredContent"), "call"), "op")),
			json_string_value(json_object_get(json_array_get(json_object_get(got, "chains"), 0), "op")));
		assert_true(json_array_size(json_object_get(json_object_get(d, "structuredContent"), "timeline")) >= 1);
		json_decref(d);
	}
	json_decref(r);
	json_decref(want);
	cw_mcp_session_destroy(&s);
}

static void test_summary_and_sql(void **state)
{
	struct cw_summary_opts o = { 0 };
	struct cw_summary *sum;
	struct cw_store *st;
	struct cw_mcp_session s;
	char err[256];
	json_t *r, *ops;

	assert_int_equal(cw_store_open(&st, db, CW_STORE_READONLY, err, sizeof(err)), 0);
	assert_int_equal(cw_summary_build(st->db, &o, &sum), 0);
	cw_store_close(st);
	init_session(&s, "2025-11-25");
	r = call(&s, "trace_summary", "{\"limit\":2}");
	ops = json_object_get(json_object_get(r, "structuredContent"), "ops");
	assert_int_equal(json_array_size(ops), sum->n < 2 ? sum->n : 2);
	{
		json_t *w = cw_summary_row_json(&sum->rows[0], 0);

		assert_true(json_equal(w, json_array_get(ops, 0)));
		json_decref(w);
	}
	assert_int_equal(json_is_true(json_object_get(json_object_get(r, "structuredContent"), "truncated")),
			 sum->n > 2);
	cw_summary_free(sum);
	json_decref(r);

	r = call(&s, "run_sql", "{\"sql\":\"SELECT id FROM events ORDER BY id LIMIT ?1\",\"params\":[5],\"max_rows\":3}");
	assert_false(json_is_true(json_object_get(r, "isError")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "structuredContent"), "row_count")), 3);
	assert_true(json_is_true(json_object_get(json_object_get(r, "structuredContent"), "truncated")));
	json_decref(r);
	r = call(&s, "stacks", "{\"top_n\":2}");
	assert_false(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
	r = call(&s, "export_timeline", "{\"since\":\"10s\"}");
	assert_false(json_is_true(json_object_get(r, "isError")));
	assert_true(json_integer_value(json_object_get(
			    json_object_get(json_object_get(r, "structuredContent"), "stats"), "slices")) > 0);
	json_decref(r);
	cw_mcp_session_destroy(&s);
}

struct canceller {
	struct cw_mcp_session *s;
};

static void *cancel_soon(void *arg)
{
	struct canceller *c = arg;
	json_t *r;

	/* Wait until the call is registered, then cancel it. */
	for (int i = 0; i < 2000; i++) {
		int found = 0;

		pthread_mutex_lock(&c->s->mu);
		for (int k = 0; k < CW_MCP_MAX_INFLIGHT; k++)
			found |= c->s->inflight[k].id != NULL;
		pthread_mutex_unlock(&c->s->mu);
		if (found)
			break;
		usleep(1000);
	}
	r = rpc(c->s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":42}}",
		 NULL);
	json_decref(r);
	return NULL;
}

/* A cancelled call stops (the SQLite progress handler sees the flag) and
 * gets no answer. */
static void test_cancel(void **state)
{
	struct cw_mcp_session s;
	struct canceller c = { &s };
	pthread_t th;
	json_t *r;

	init_session(&s, "2025-11-25");
	pthread_create(&th, NULL, cancel_soon, &c);
	r = rpc(&s,
		 "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{\"name\":\"run_sql\","
		 "\"arguments\":{\"sql\":\"WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) "
		 "SELECT count(*) FROM n\"}}}",
		 NULL);
	pthread_join(th, NULL);
	assert_null(r);
	cw_mcp_session_destroy(&s);
}

static void test_prompts_resources(void **state)
{
	struct cw_mcp_session s;
	json_t *r;
	const char *text;

	init_session(&s, "2025-11-25");
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/list\"}", NULL);
	assert_int_equal(json_array_size(json_object_get(json_object_get(r, "result"), "prompts")), 2);
	json_decref(r);
	r = rpc(&s,
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"investigate\","
		 "\"arguments\":{\"question\":\"why is rank 3 slow?\"}}}",
		 NULL);
	text = json_string_value(json_object_get(
		json_object_get(json_array_get(json_object_get(json_object_get(r, "result"), "messages"), 0),
				"content"),
		"text"));
	assert_non_null(text);
	assert_non_null(strstr(text, "why is rank 3 slow?"));
	assert_non_null(strstr(text, "never estimate"));
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"x\"}}", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_PARAMS);
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":\"causeway://schema\"}}",
		 NULL);
	text = json_string_value(json_object_get(
		json_array_get(json_object_get(json_object_get(r, "result"), "contents"), 0), "text"));
	assert_non_null(text);
	assert_non_null(strstr(text, "events"));
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///etc/passwd\"}}",
		 NULL);
	assert_int_equal(err_code(r), -32002);
	json_decref(r);
	cw_mcp_session_destroy(&s);
}

/* DNS-rebinding protection of /mcp: foreign Origin always refused; Host
 * refused only on an open loopback listener. */
static void test_origin_check(void **state)
{
	char why[256];

	assert_int_equal(cw_origin_check(NULL, NULL, 1, why, sizeof(why)), 0);
	assert_int_equal(cw_origin_check("http://localhost:7070", "localhost:7070", 1, why, sizeof(why)), 0);
	assert_int_equal(cw_origin_check("https://127.0.0.1", "127.0.0.1:7070", 1, why, sizeof(why)), 0);
	assert_int_equal(cw_origin_check("http://[::1]:7070", "[::1]:7070", 1, why, sizeof(why)), 0);
	assert_int_equal(cw_origin_check("http://evil.example", "127.0.0.1:7070", 1, why, sizeof(why)),
			 -EACCES);
	assert_non_null(strstr(why, "evil.example"));
	assert_int_equal(cw_origin_check("http://localhost.evil.example", NULL, 0, why, sizeof(why)),
			 -EACCES);
	assert_int_equal(cw_origin_check("http://127.0.0.1.evil.example", NULL, 0, why, sizeof(why)),
			 -EACCES);
	assert_int_equal(cw_origin_check("null", NULL, 0, why, sizeof(why)), -EACCES);
	assert_int_equal(cw_origin_check(NULL, "evil.example:7070", 1, why, sizeof(why)), -EACCES);
	/* Not loopback (or the gate holds credentials): any Host. */
	assert_int_equal(cw_origin_check(NULL, "gpu-17.cluster:7070", 0, why, sizeof(why)), 0);
}

#define META26 "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}"

/* The stateless revision: no handshake, server/discover, resultType,
 * -32022 for a version it does not serve; the same session object may
 * carry both eras. */
static void test_stateless(void **state)
{
	struct cw_mcp_session s;
	json_t *r, *res;

	cw_mcp_session_init(&s);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META26 "}}", NULL);
	res = json_object_get(r, "result");
	assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
	assert_string_equal(json_string_value(json_array_get(json_object_get(res, "supportedVersions"), 0)),
			    "2026-07-28");
	assert_non_null(json_object_get(json_object_get(res, "capabilities"), "tools"));
	json_decref(r);
	r = rpc(&s,
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"run_sql\","
		"\"arguments\":{\"sql\":\"SELECT 2 AS x\"}," META26 "}}",
		NULL);
	res = json_object_get(r, "result");
	assert_string_equal(json_string_value(json_object_get(res, "resultType")), "complete");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(json_object_get(res, "structuredContent"), "rows"), 0), "x")),
			 2);
	json_decref(r);
	r = rpc(&s,
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
		"\"io.modelcontextprotocol/protocolVersion\":\"2030-01-01\"}}}",
		NULL);
	assert_int_equal(err_code(r), -32022);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(r, "error"), "data"),
							       "requested")),
			    "2030-01-01");
	json_decref(r);
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2026-07-28\"," META26 "}}",
		NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_METHOD_NOT_FOUND);
	json_decref(r);
	/* Still not initialized for the handshake era. */
	r = rpc(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}", NULL);
	assert_int_equal(err_code(r), CW_JSONRPC_INVALID_REQUEST);
	json_decref(r);
	cw_mcp_session_destroy(&s);
}

/* nccl_ranks answers explain --ranks' rows (cw_nccl_ranks_json over
 * cw_explain_run's window) on an NCCL demo: a hang names the missing rank,
 * limit cuts the table, a node filter for another node leaves it empty. */
static void test_nccl_ranks_match_explain(void **state)
{
	struct cw_demo_opts d = { 0 };
	struct cw_demo_result res;
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result ex;
	struct cw_mcp_session s;
	struct cw_store *st;
	const char *saved = cfg.db_path;
	char ndb[160], err[512];
	json_t *want, *r, *got;

	snprintf(ndb, sizeof(ndb), "%s/nccl.db", dir);
	d.scenario = cw_demo_find("nccl-hang");
	d.seed = 1;
	d.node = "demo-node";
	assert_int_equal(cw_demo_build(ndb, &d, 0, 0, &res, &ex, err, sizeof(err)), CW_EXIT_OK);
	cw_explain_result_free(&ex);
	assert_int_equal(cw_store_open(&st, ndb, CW_STORE_READONLY, err, sizeof(err)), 0);
	assert_int_equal(cw_explain_run(st->db, &o, &ex), 0);
	want = cw_nccl_ranks_json(st->db, &o, ex.from_wall_ns, ex.to_wall_ns);
	cw_explain_result_free(&ex);
	cw_store_close(st);
	assert_int_equal(json_array_size(want), 4);

	cfg.db_path = ndb;
	init_session(&s, "2025-11-25");
	r = call(&s, "nccl_ranks", "{}");
	assert_false(json_is_true(json_object_get(r, "isError")));
	got = json_object_get(r, "structuredContent");
	assert_true(json_equal(json_object_get(got, "ranks"), want));
	assert_true(json_is_true(json_object_get(got, "hang")));
	assert_int_equal(json_integer_value(json_array_get(json_object_get(got, "missing_ranks"), 0)), 3);
	assert_false(json_is_true(json_object_get(got, "truncated")));
	json_decref(r);
	r = call(&s, "nccl_ranks", "{\"limit\":2}");
	got = json_object_get(r, "structuredContent");
	assert_int_equal(json_array_size(json_object_get(got, "ranks")), 2);
	assert_int_equal(json_integer_value(json_object_get(got, "total_ranks")), 4);
	assert_true(json_is_true(json_object_get(got, "truncated")));
	assert_int_equal(json_integer_value(json_array_get(json_object_get(got, "missing_ranks"), 0)), 3);
	json_decref(r);
	r = call(&s, "nccl_ranks", "{\"node\":\"no-such-node\"}");
	assert_int_equal(json_array_size(json_object_get(json_object_get(r, "structuredContent"), "ranks")), 0);
	json_decref(r);
	r = call(&s, "nccl_ranks", "{\"hang_after\":\"soon\"}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	json_decref(r);
	cw_mcp_session_destroy(&s);
	cfg.db_path = saved;
	json_decref(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_envelope_errors),	    cmocka_unit_test(test_versions_and_handshake),
		cmocka_unit_test(test_batches),		    cmocka_unit_test(test_tool_table),
		cmocka_unit_test(test_check_args),	    cmocka_unit_test(test_tools_call_errors),
		cmocka_unit_test(test_chains_match_explain), cmocka_unit_test(test_summary_and_sql),
		cmocka_unit_test(test_cancel), cmocka_unit_test(test_prompts_resources), cmocka_unit_test(test_demo_enum), cmocka_unit_test(test_origin_check), cmocka_unit_test(test_stateless),
		cmocka_unit_test(test_nccl_ranks_match_explain),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
