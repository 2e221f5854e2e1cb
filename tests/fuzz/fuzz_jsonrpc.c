/* Fuzzes the MCP dispatcher with arbitrary messages: the JSON-RPC envelope
 * (jansson parse, shape checks, error objects), batches, every method's
 * params and the tools' schema-driven argument checks. The first byte picks
 * the negotiated protocol version (batches exist only in 2025-03-26); the
 * rest is one message, as a stdio line or an HTTP body would carry it.
 * Tools that touch the host are off and the database does not exist, so a
 * call that passes the argument checks fails fast in the store. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cw_mcp_config cfg = {
		.db_path = "/nonexistent/causeway-fuzz.db", .node = "fuzz", .transport = "fuzz",
		.timeout_ns = 1000000000ULL,
	};
	struct cw_mcp_session s;
	enum cw_mcp_kind kind;
	const char *method;
	json_t *r;

	if (size < 1)
		return 0;
	cw_mcp_session_init(&s);
	if (data[0] & 1) {
		s.initialized = 1;
		snprintf(s.version, sizeof(s.version), "%s", cw_mcp_protocol_versions[(data[0] >> 1) % 3]);
	}
	r = cw_mcp_handle(&cfg, &s, (const char *)data + 1, size - 1, NULL, NULL, &kind, &method);
	/* Every answer is an object or a non-empty array with "jsonrpc". */
	if (r && !(json_is_object(r) ? json_object_get(r, "jsonrpc") != NULL : json_array_size(r) > 0))
		__builtin_trap();
	json_decref(r);
	cw_mcp_session_destroy(&s);
	return 0;
}
