/* JSON-RPC 2.0 envelopes for the MCP server: parsing with jansson, the
 * shape checks the spec asks for, and the error objects. Everything here
 * sees untrusted bytes first, so it is small and has a fuzz target
 * (tests/fuzz/fuzz_jsonrpc.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mcp/mcp.h"

int cw_jsonrpc_parse(const char *buf, size_t len, json_t **root, char *err, size_t errlen)
{
	json_error_t je;

	*root = NULL;
	if (len > CW_MCP_MAX_MESSAGE) {
		snprintf(err, errlen, "message larger than %zu bytes", CW_MCP_MAX_MESSAGE);
		return CW_JSONRPC_PARSE_ERROR;
	}
	/* Duplicate keys make "which id?" ambiguous: refuse them. */
	*root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!*root) {
		snprintf(err, errlen, "parse error: %s", je.text);
		return CW_JSONRPC_PARSE_ERROR;
	}
	return 0;
}

/* An id is a string or an integer (JSON-RPC also allows null and numbers
 * with fractions; MCP says string or integer, and never null). */
static int id_ok(json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

int cw_jsonrpc_classify(json_t *v, struct cw_jsonrpc_msg *m, char *err, size_t errlen)
{
	json_t *ver, *id, *method;

	memset(m, 0, sizeof(*m));
	m->root = v;
	if (!json_is_object(v)) {
		snprintf(err, errlen, "a message must be a JSON object");
		return CW_JSONRPC_INVALID_REQUEST;
	}
	id = json_object_get(v, "id");
	if (id && id_ok(id))
		m->id = id;
	ver = json_object_get(v, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0")) {
		snprintf(err, errlen, "\"jsonrpc\" must be \"2.0\"");
		return CW_JSONRPC_INVALID_REQUEST;
	}
	if (id && !id_ok(id)) {
		snprintf(err, errlen, "\"id\" must be a string or an integer");
		return CW_JSONRPC_INVALID_REQUEST;
	}
	method = json_object_get(v, "method");
	if (!method) {
		/* A response to something we sent; we send no requests, so it
		 * is only checked for shape and then ignored. */
		if (!id || (!json_object_get(v, "result") && !json_object_get(v, "error"))) {
			snprintf(err, errlen, "a message needs \"method\" (request) or \"result\"/\"error\"");
			return CW_JSONRPC_INVALID_REQUEST;
		}
		m->kind = CW_MCP_KIND_RESPONSE;
		return 0;
	}
	if (!json_is_string(method) || !json_string_length(method)) {
		snprintf(err, errlen, "\"method\" must be a non-empty string");
		return CW_JSONRPC_INVALID_REQUEST;
	}
	if (strlen(json_string_value(method)) != json_string_length(method)) {
		snprintf(err, errlen, "\"method\" contains a NUL byte");
		return CW_JSONRPC_INVALID_REQUEST;
	}
	m->method = json_string_value(method);
	m->params = json_object_get(v, "params");
	if (m->params && !json_is_object(m->params) && !json_is_array(m->params)) {
		snprintf(err, errlen, "\"params\" must be an object");
		return CW_JSONRPC_INVALID_REQUEST;
	}
	m->kind = id ? CW_MCP_KIND_REQUEST : CW_MCP_KIND_NOTIFICATION;
	return 0;
}

json_t *cw_jsonrpc_result(json_t *id, json_t *result)
{
	json_t *o = json_object();

	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set(o, "id", id);
	json_object_set_new(o, "result", result ? result : json_object());
	return o;
}

json_t *cw_jsonrpc_error(json_t *id, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = json_object();
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set(o, "id", id ? id : json_null());
	json_object_set_new(o, "error", json_pack("{s:i, s:s}", "code", code, "message", msg));
	return o;
}

json_t *cw_jsonrpc_notification(const char *method, json_t *params)
{
	json_t *o = json_object();

	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set_new(o, "method", json_string(method));
	if (params)
		json_object_set_new(o, "params", params);
	return o;
}
