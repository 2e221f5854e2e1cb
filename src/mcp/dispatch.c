/* MCP method dispatch: the handshake and version negotiation, sessions,
 * cancellation and the method table. Transports call cw_mcp_handle() once
 * per message. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "util/timeutil.h"

const char *const cw_mcp_protocol_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", NULL };

/* The stateless revision: no handshake, the version in every request's
 * _meta, server/discover, resultType on every result. */
#define STATELESS_VERSION "2026-07-28"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define CW_MCP_UNSUPPORTED_VERSION -32022

const char *cw_mcp_request_version(json_t *params)
{
	return json_string_value(json_object_get(json_object_get(params, "_meta"), META_VERSION));
}

/* logging/setLevel names (RFC 5424 severities, as MCP spells them). */
static const char *const log_levels[] = { "debug", "info",  "notice",    "warning",
					  "error", "critical", "alert", "emergency", NULL };

#define DEFAULT_TOOL_TIMEOUT_NS (30ULL * NSEC_PER_SEC)

static const char instructions[] =
	"causeway answers why GPU work is slow from a trace database: CUDA, driver and NCCL calls "
	"joined per thread with scheduler, I/O and memory events. Start with causal_chains (the "
	"diagnosis, most severe first) or trace_summary (per-op latency); drill down with "
	"explain_call and stacks using the ids in those results; use run_sql for anything else "
	"(read the causeway://schema resource first). Quote numbers from results; never estimate "
	"them.";

void cw_mcp_session_init(struct cw_mcp_session *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->log_level = 1; /* info */
}

void cw_mcp_session_destroy(struct cw_mcp_session *s)
{
	pthread_mutex_destroy(&s->mu);
}

static json_t *capabilities(void)
{
	return json_pack("{s:{s:b}, s:{s:b}, s:{s:b, s:b}, s:{}, s:{}}", "tools", "listChanged", 0, "prompts",
			 "listChanged", 0, "resources", "subscribe", 0, "listChanged", 0, "logging", "completions");
}

static const char *negotiate(const char *asked)
{
	for (int i = 0; asked && cw_mcp_protocol_versions[i]; i++)
		if (!strcmp(asked, cw_mcp_protocol_versions[i]))
			return cw_mcp_protocol_versions[i];
	return CW_MCP_PROTOCOL_LATEST;
}

static json_t *m_initialize(struct cw_mcp_session *s, json_t *id, json_t *params)
{
	json_t *pv = json_object_get(params, "protocolVersion"), *ci = json_object_get(params, "clientInfo");
	const char *v;

	if (!json_is_object(params) || !json_is_string(pv))
		return cw_jsonrpc_error(id, CW_JSONRPC_INVALID_PARAMS,
					"initialize needs params.protocolVersion (a string such as \"%s\")",
					CW_MCP_PROTOCOL_LATEST);
	v = negotiate(json_string_value(pv));
	pthread_mutex_lock(&s->mu);
	snprintf(s->version, sizeof(s->version), "%s", v);
	snprintf(s->client_name, sizeof(s->client_name), "%s",
		 json_is_string(json_object_get(ci, "name")) ? json_string_value(json_object_get(ci, "name")) : "");
	s->initialized = 1;
	pthread_mutex_unlock(&s->mu);
	return cw_jsonrpc_result(id, json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v,
					       "capabilities", capabilities(), "serverInfo", "name", "causeway",
					       "title", "causeway", "version", CW_VERSION, "instructions",
					       instructions));
}

static json_t *tools_cached[2]; /* [0] every tool, [1] without the live ones */

static void tools_build(void)
{
	size_t n;
	const struct cw_mcp_tool *t = cw_mcp_tools(&n);

	for (int k = 0; k < 2; k++) {
		json_t *a = json_array();

		for (size_t i = 0; i < n; i++) {
			json_t *j = k && cw_mcp_tool_live(&t[i]) ? NULL : cw_mcp_tool_json(&t[i]);

			if (j)
				json_array_append_new(a, j);
		}
		tools_cached[k] = a;
	}
}

/* The list is the same for every client of a server: built once, shared
 * read-only. */
static json_t *tools_list_json(const struct cw_mcp_config *cfg)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, tools_build);
	return json_pack("{s:O}", "tools", tools_cached[cfg->live_tools_off != NULL]);
}

static int inflight_add(struct cw_mcp_session *s, json_t *id, atomic_int *flag)
{
	int rc = -EBUSY;

	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < CW_MCP_MAX_INFLIGHT; i++) {
		if (!s->inflight[i].id) {
			s->inflight[i].id = json_incref(id);
			s->inflight[i].cancelled = flag;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static void inflight_del(struct cw_mcp_session *s, atomic_int *flag)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < CW_MCP_MAX_INFLIGHT; i++) {
		if (s->inflight[i].cancelled == flag) {
			json_decref(s->inflight[i].id);
			s->inflight[i].id = NULL;
			s->inflight[i].cancelled = NULL;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

static void cancel(struct cw_mcp_session *s, json_t *params)
{
	json_t *rid = json_object_get(params, "requestId");

	if (!rid)
		return;
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < CW_MCP_MAX_INFLIGHT; i++)
		if (s->inflight[i].id && json_equal(s->inflight[i].id, rid))
			atomic_store(s->inflight[i].cancelled, 1);
	pthread_mutex_unlock(&s->mu);
}

static json_t *m_tools_call(const struct cw_mcp_config *cfg, struct cw_mcp_session *s, json_t *id,
			    json_t *params, cw_mcp_notify_fn notify, void *notify_arg)
{
	json_t *name = json_object_get(params, "name"), *args = json_object_get(params, "arguments"), *res;
	const struct cw_mcp_tool *t;
	struct cw_mcp_call c;

	if (!json_is_string(name))
		return cw_jsonrpc_error(id, CW_JSONRPC_INVALID_PARAMS,
					"tools/call needs params.name, one of the names from tools/list");
	t = cw_mcp_tool_find(json_string_value(name));
	if (!t)
		return cw_jsonrpc_error(id, CW_JSONRPC_INVALID_PARAMS,
					"unknown tool \"%s\"; tools/list names the tools", json_string_value(name));
	if (cfg->live_tools_off && cw_mcp_tool_live(t))
		return cw_jsonrpc_error(id, CW_JSONRPC_INVALID_PARAMS,
					"tool \"%s\" is off on this server: it acts on live processes or files, "
					"which the network transport does not allow by default; to enable it, %s",
					t->name, cfg->live_tools_off);
	memset(&c, 0, sizeof(c));
	c.cfg = cfg;
	c.sess = s;
	c.id = id;
	c.notify = notify;
	c.notify_arg = notify_arg;
	c.progress_last = -1;
	c.deadline_ns = cw_monotonic_ns() + (cfg->timeout_ns ? cfg->timeout_ns : DEFAULT_TOOL_TIMEOUT_NS);
	c.progress_token = json_object_get(json_object_get(params, "_meta"), "progressToken");
	if (c.progress_token && !json_is_string(c.progress_token) && !json_is_integer(c.progress_token))
		c.progress_token = NULL;
	atomic_init(&c.cancelled, 0);
	if (inflight_add(s, id, &c.cancelled))
		return cw_jsonrpc_error(id, CW_JSONRPC_INTERNAL_ERROR,
					"%d tool calls are already running in this session; wait for one to finish",
					CW_MCP_MAX_INFLIGHT);
	res = cw_mcp_tool_call(&c, t, args);
	inflight_del(s, &c.cancelled);
	/* A cancelled request gets no answer (the client has forgotten it). */
	if (atomic_load(&c.cancelled)) {
		json_decref(res);
		return NULL;
	}
	return cw_jsonrpc_result(id, res);
}

static json_t *m_set_level(struct cw_mcp_session *s, json_t *id, json_t *params)
{
	const char *l = json_string_value(json_object_get(params, "level"));

	for (int i = 0; l && log_levels[i]; i++) {
		if (!strcmp(l, log_levels[i])) {
			pthread_mutex_lock(&s->mu);
			s->log_level = i;
			pthread_mutex_unlock(&s->mu);
			return cw_jsonrpc_result(id, json_object());
		}
	}
	return cw_jsonrpc_error(id, CW_JSONRPC_INVALID_PARAMS,
				"params.level must be one of debug, info, notice, warning, error, critical, "
				"alert, emergency");
}

static json_t *with_code(json_t *id, json_t *res, const int *code, const char *err)
{
	return res ? cw_jsonrpc_result(id, res) : cw_jsonrpc_error(id, *code, "%s", err);
}

static json_t *m_discover(json_t *id)
{
	json_t *v = json_array();

	json_array_append_new(v, json_string(STATELESS_VERSION));
	for (int i = 0; cw_mcp_protocol_versions[i]; i++)
		json_array_append_new(v, json_string(cw_mcp_protocol_versions[i]));
	return cw_jsonrpc_result(id, json_pack("{s:s, s:o, s:o, s:{s:s, s:s, s:s}, s:s}", "resultType", "complete",
					       "supportedVersions", v, "capabilities", capabilities(),
					       "serverInfo", "name", "causeway", "title", "causeway", "version",
					       CW_VERSION, "instructions", instructions));
}

static json_t *methods(const struct cw_mcp_config *cfg, struct cw_mcp_session *s, struct cw_jsonrpc_msg *m,
		       cw_mcp_notify_fn notify, void *notify_arg, int stateless);

/* A request of the stateless revision: answered on its own, whatever the
 * session did before; every result says resultType "complete" (causeway
 * never asks the client for input mid-call). */
static json_t *stateless_request(const struct cw_mcp_config *cfg, struct cw_mcp_session *s,
				 struct cw_jsonrpc_msg *m, cw_mcp_notify_fn notify, void *notify_arg)
{
	const char *v = cw_mcp_request_version(m->params);
	json_t *r, *res;

	if (strcmp(v, STATELESS_VERSION)) {
		r = cw_jsonrpc_error(m->id, CW_MCP_UNSUPPORTED_VERSION, "unsupported protocol version \"%.32s\"", v);
		json_object_set_new(json_object_get(r, "error"), "data",
				    json_pack("{s:s, s:[s]}", "requested", v, "supported", STATELESS_VERSION));
		return r;
	}
	if (!strcmp(m->method, "server/discover"))
		return m_discover(m->id);
	if (!strcmp(m->method, "initialize"))
		return cw_jsonrpc_error(m->id, CW_JSONRPC_METHOD_NOT_FOUND,
					"initialize is not part of protocol %s: send requests directly",
					STATELESS_VERSION);
	r = methods(cfg, s, m, notify, notify_arg, 1);
	res = json_object_get(r, "result");
	if (json_is_object(res))
		json_object_set_new(res, "resultType", json_string("complete"));
	return r;
}

static json_t *request(const struct cw_mcp_config *cfg, struct cw_mcp_session *s, struct cw_jsonrpc_msg *m,
		       cw_mcp_notify_fn notify, void *notify_arg)
{
	if (json_is_object(m->params) && cw_mcp_request_version(m->params))
		return stateless_request(cfg, s, m, notify, notify_arg);
	if (!strcmp(m->method, "server/discover"))
		return m_discover(m->id);
	return methods(cfg, s, m, notify, notify_arg, cfg->mode == CW_MCP_STATELESS);
}

static json_t *methods(const struct cw_mcp_config *cfg, struct cw_mcp_session *s, struct cw_jsonrpc_msg *m,
		       cw_mcp_notify_fn notify, void *notify_arg, int stateless)
{
	json_t *id = m->id, *p = m->params;
	char err[512];
	int code = 0, init;

	if (!strcmp(m->method, "initialize"))
		return m_initialize(s, id, p);
	if (!strcmp(m->method, "ping"))
		return cw_jsonrpc_result(id, json_object());
	pthread_mutex_lock(&s->mu);
	init = s->initialized;
	pthread_mutex_unlock(&s->mu);
	if (!init && !stateless)
		return cw_jsonrpc_error(id, CW_JSONRPC_INVALID_REQUEST,
					"the session is not initialized: send initialize first");
	if (p && !json_is_object(p))
		return cw_jsonrpc_error(id, CW_JSONRPC_INVALID_PARAMS, "params must be an object");
	if (!strcmp(m->method, "tools/list"))
		return cw_jsonrpc_result(id, tools_list_json(cfg));
	if (!strcmp(m->method, "tools/call"))
		return m_tools_call(cfg, s, id, p, notify, notify_arg);
	if (!strcmp(m->method, "prompts/list"))
		return cw_jsonrpc_result(id, cw_mcp_prompts_list());
	if (!strcmp(m->method, "prompts/get"))
		return with_code(id, cw_mcp_prompt_get(p, &code, err, sizeof(err)), &code, err);
	if (!strcmp(m->method, "resources/list"))
		return cw_jsonrpc_result(id, cw_mcp_resources_list());
	if (!strcmp(m->method, "resources/templates/list"))
		return cw_jsonrpc_result(id, json_pack("{s:[]}", "resourceTemplates"));
	if (!strcmp(m->method, "resources/read"))
		return with_code(id, cw_mcp_resource_read(p, &code, err, sizeof(err)), &code, err);
	if (!strcmp(m->method, "logging/setLevel"))
		return m_set_level(s, id, p);
	if (!strcmp(m->method, "completion/complete"))
		return cw_jsonrpc_result(
			id, json_pack("{s:{s:[], s:i, s:b}}", "completion", "values", "total", 0, "hasMore", 0));
	return cw_jsonrpc_error(id, CW_JSONRPC_METHOD_NOT_FOUND, "method \"%s\" not found", m->method);
}

static void notification(struct cw_mcp_session *s, struct cw_jsonrpc_msg *m)
{
	if (!strcmp(m->method, "notifications/initialized")) {
		pthread_mutex_lock(&s->mu);
		s->ready = 1;
		pthread_mutex_unlock(&s->mu);
	} else if (!strcmp(m->method, "notifications/cancelled")) {
		cancel(s, m->params);
	}
	/* Others (progress, roots/list_changed) need nothing from a server
	 * that sends no requests. */
}

static json_t *one(const struct cw_mcp_config *cfg, struct cw_mcp_session *s, json_t *v,
		   cw_mcp_notify_fn notify, void *notify_arg, enum cw_mcp_kind *kind, const char **method)
{
	struct cw_jsonrpc_msg m;
	char err[256];

	if (cw_jsonrpc_classify(v, &m, err, sizeof(err))) {
		*kind = CW_MCP_KIND_INVALID;
		return cw_jsonrpc_error(m.id, CW_JSONRPC_INVALID_REQUEST, "invalid request: %s", err);
	}
	*kind = m.kind;
	if (method)
		*method = m.method;
	switch (m.kind) {
	case CW_MCP_KIND_REQUEST:
		return request(cfg, s, &m, notify, notify_arg);
	case CW_MCP_KIND_NOTIFICATION:
		notification(s, &m);
		return NULL;
	default:
		return NULL;
	}
}

json_t *cw_mcp_handle(const struct cw_mcp_config *cfg, struct cw_mcp_session *sess, const char *buf,
		      size_t len, cw_mcp_notify_fn notify, void *notify_arg, enum cw_mcp_kind *kind,
		      const char **method)
{
	json_t *root, *out, *v;
	char err[256], version[16];
	size_t i;

	if (method)
		*method = NULL;
	*kind = CW_MCP_KIND_INVALID;
	if (cw_jsonrpc_parse(buf, len, &root, err, sizeof(err)))
		return cw_jsonrpc_error(NULL, CW_JSONRPC_PARSE_ERROR, "%s", err);
	if (!json_is_array(root)) {
		out = one(cfg, sess, root, notify, notify_arg, kind, method);
		json_decref(root);
		return out;
	}
	/* Batches were in 2025-03-26 only; later revisions removed them. */
	pthread_mutex_lock(&sess->mu);
	snprintf(version, sizeof(version), "%s", sess->version);
	pthread_mutex_unlock(&sess->mu);
	if (strcmp(version, "2025-03-26") || !json_array_size(root)) {
		size_t n = json_array_size(root);

		json_decref(root);
		if (!n)
			return cw_jsonrpc_error(NULL, CW_JSONRPC_INVALID_REQUEST, "invalid request: an empty batch");
		return cw_jsonrpc_error(NULL, CW_JSONRPC_INVALID_REQUEST,
					"invalid request: JSON-RPC batches are not supported by protocol %s",
					version[0] ? version : CW_MCP_PROTOCOL_LATEST);
	}
	*kind = CW_MCP_KIND_BATCH;
	out = json_array();
	json_array_foreach(root, i, v) {
		enum cw_mcp_kind k;
		json_t *r = one(cfg, sess, v, notify, notify_arg, &k, NULL);

		if (r)
			json_array_append_new(out, r);
	}
	json_decref(root);
	if (!json_array_size(out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}
