/* The MCP server: causeway's analysis for AI assistants (docs/mcp.md).
 *
 * One dispatcher serves both transports: `causeway mcp` (newline-delimited
 * JSON-RPC 2.0 on stdio, cmd/cmd_mcp.c) and `/mcp` on serve and trace
 * --serve (Streamable HTTP, server/mcp_http.c). A transport hands every
 * message it receives to cw_mcp_handle() and writes back what it returns;
 * the dispatcher never touches a socket or a file descriptor.
 *
 * Layers:
 *   jsonrpc.c   envelope parsing and error objects (fuzzed);
 *   dispatch.c  sessions, version negotiation, methods;
 *   tools*.c    the tool table: each tool is a thin wrapper over what a
 *               command already computes (explain, query, export, ...);
 *   prompts.c   prompts and causeway:// resources.
 *
 * Both eras are served side by side: the handshake revisions (2025-03-26 to
 * 2025-11-25, a session holds the version) and the stateless 2026-07-28
 * revision (each request carries its version in _meta; server/discover). */
#ifndef CW_MCP_MCP_H
#define CW_MCP_MCP_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "check/report.h"
#include "fleet/fanout.h"

/* The newest first; initialize echoes the client's version when it is one
 * of these, and otherwise answers with the newest. */
#define CW_MCP_PROTOCOL_LATEST "2025-11-25"
extern const char *const cw_mcp_protocol_versions[];

/* The stateless revision 2026-07-28 is served per request: a request whose
 * params._meta names "io.modelcontextprotocol/protocolVersion" needs no
 * handshake or session (server/discover describes the server). Returns that
 * version, or NULL for a request of the handshake era. */
#define CW_MCP_PROTOCOL_STATELESS "2026-07-28"
const char *cw_mcp_request_version(json_t *params);

/* JSON-RPC 2.0 error codes. */
#define CW_JSONRPC_PARSE_ERROR -32700
#define CW_JSONRPC_INVALID_REQUEST -32600
#define CW_JSONRPC_METHOD_NOT_FOUND -32601
#define CW_JSONRPC_INVALID_PARAMS -32602
#define CW_JSONRPC_INTERNAL_ERROR -32603

/* One message is at most this many bytes (stdio line or HTTP body). */
#define CW_MCP_MAX_MESSAGE ((size_t)1 << 20)
/* A tool's text rendering is cut here (the structured result has its own
 * row and chain caps). */
#define CW_MCP_MAX_TEXT ((size_t)24 << 10)
#define CW_MCP_DEFAULT_ROWS 50
#define CW_MCP_MAX_ROWS 1000
#define CW_MCP_DEFAULT_CHAINS 10
#define CW_MCP_MAX_CHAINS 100
/* Tool calls in flight per session (a client cannot start unbounded work). */
#define CW_MCP_MAX_INFLIGHT 16

enum cw_mcp_mode {
	CW_MCP_STATEFUL = 0, /* initialize first; a session holds the version */
	CW_MCP_STATELESS,    /* no handshake required for any request */
};

/* What the server answers from; the same for every session. */
struct cw_mcp_config {
	const char *db_path;
	const char *node;
	const char *transport;   /* "stdio" or "http": written into results */
	uint64_t timeout_ns;     /* per tool call; 0: 30 s */
	int allow_where;         /* where: live stacks need root on the traced host */
	int allow_export_path;   /* export_timeline may write files */
	int allow_demo;          /* run_demo may write temporary databases */
	int demo_keep_db;        /* run_demo leaves its database for the caller (stdio) */
	/* Set: the tools that act on live processes or files (marked live in the
	 * table) are neither listed nor callable; the text says how to enable
	 * them. NULL: they are served. */
	const char *live_tools_off;
	/* Who asked (stdio: the peer of a unix socket, else this process's real
	 * ids): where refuses a process this caller could not ptrace. */
	struct cw_mcp_caller {
		int known;
		unsigned uid, gid;
		int cap_sys_ptrace; /* in the caller's effective set */
	} caller;
	const struct cw_fleet_opts *fleet; /* NULL: the fleet tool reports it is not set up */
	struct cw_check_env check; /* what the check tool names (node, store, NVML library) */
	enum cw_mcp_mode mode;
};

struct cw_mcp_inflight {
	json_t *id;
	atomic_int *cancelled;
};

/* Per-client state: a stdio process has one, HTTP one per Mcp-Session-Id. */
struct cw_mcp_session {
	pthread_mutex_t mu;
	int initialized;          /* initialize answered */
	int ready;                /* notifications/initialized seen */
	char version[16];         /* negotiated protocol version */
	char client_name[64];
	struct cw_mcp_inflight inflight[CW_MCP_MAX_INFLIGHT];
	int log_level;            /* logging/setLevel: index into the syslog names */
};

/* Where a call sends notifications (progress) before its answer; the
 * transport decides how they travel (a stdout line, an SSE event). May be
 * NULL: notifications are then dropped. */
typedef void (*cw_mcp_notify_fn)(void *arg, json_t *msg);

/* One request being answered. Tools see it to report progress and to stop
 * early when cancelled or past the deadline. */
struct cw_mcp_call {
	const struct cw_mcp_config *cfg;
	struct cw_mcp_session *sess;
	json_t *id;             /* borrowed */
	json_t *progress_token; /* borrowed; NULL: the client asked for no progress */
	atomic_int cancelled;
	uint64_t deadline_ns;   /* monotonic */
	cw_mcp_notify_fn notify;
	void *notify_arg;
	double progress_last;
};

void cw_mcp_session_init(struct cw_mcp_session *s);
void cw_mcp_session_destroy(struct cw_mcp_session *s);

/* Handles one message (the bytes of a line or an HTTP body). Returns the
 * answer to send (a response object, an array for a batch) or NULL when
 * there is none (notifications, responses, cancelled requests). *kind is
 * set to what the message was, so HTTP can pick 202 vs 200. */
enum cw_mcp_kind {
	CW_MCP_KIND_INVALID = 0, /* answered with a JSON-RPC error */
	CW_MCP_KIND_REQUEST,
	CW_MCP_KIND_NOTIFICATION,
	CW_MCP_KIND_RESPONSE,
	CW_MCP_KIND_BATCH,
};
json_t *cw_mcp_handle(const struct cw_mcp_config *cfg, struct cw_mcp_session *sess, const char *buf,
		      size_t len, cw_mcp_notify_fn notify, void *notify_arg, enum cw_mcp_kind *kind,
		      const char **method);

/* ---- jsonrpc.c: the envelope ---- */

/* A parsed message, borrowing from root. */
struct cw_jsonrpc_msg {
	json_t *root;
	json_t *id;     /* NULL for notifications */
	const char *method; /* NULL for responses */
	json_t *params; /* NULL when absent */
	enum cw_mcp_kind kind;
};

/* Parses buf as one JSON value. Returns 0 with *root set, or
 * CW_JSONRPC_PARSE_ERROR (not JSON, over CW_MCP_MAX_MESSAGE, or nesting
 * deeper than jansson allows). */
int cw_jsonrpc_parse(const char *buf, size_t len, json_t **root, char *err, size_t errlen);
/* Validates one message object. Returns 0, or CW_JSONRPC_INVALID_REQUEST
 * with err (then m->id is the id when one could be read, else NULL). */
int cw_jsonrpc_classify(json_t *v, struct cw_jsonrpc_msg *m, char *err, size_t errlen);
/* {"jsonrpc":"2.0","id":id,"result":result}; steals result. */
json_t *cw_jsonrpc_result(json_t *id, json_t *result);
/* {"jsonrpc":"2.0","id":id|null,"error":{"code","message"}}. */
json_t *cw_jsonrpc_error(json_t *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* {"jsonrpc":"2.0","method":method,"params":params}; steals params. */
json_t *cw_jsonrpc_notification(const char *method, json_t *params);

/* ---- tools.c ---- */

struct strbuf;

/* A tool fills *out (structuredContent, an object) and text (the compact
 * rendering). It returns 0, or -EINVAL for bad arguments / -errno for a
 * failure with err saying what to do; both become isError results. */
typedef int (*cw_mcp_tool_fn)(struct cw_mcp_call *c, json_t *args, json_t **out, struct strbuf *text,
			      char *err, size_t errlen);

struct cw_mcp_tool {
	const char *name;
	const char *title;
	const char *description; /* written for a model: when to use it, what comes back */
	const char *input_schema;  /* JSON Schema text */
	const char *output_schema; /* JSON Schema text */
	cw_mcp_tool_fn fn;
	int read_only;
};

const struct cw_mcp_tool *cw_mcp_tools(size_t *n);
const struct cw_mcp_tool *cw_mcp_tool_find(const char *name);
/* 1 for a tool that acts on live processes or files (where, run_demo): off
 * over the network unless configured (cw_mcp_config.live_tools_off). */
int cw_mcp_tool_live(const struct cw_mcp_tool *t);
/* The tools/list entry (parsed schemas and annotations); NULL on a schema
 * that does not parse (a unit test keeps that from shipping). */
json_t *cw_mcp_tool_json(const struct cw_mcp_tool *t);
/* The tool's inputSchema as served (run_demo's scenario enum filled from
 * the demo table); NULL when it does not parse. */
json_t *cw_mcp_input_schema(const struct cw_mcp_tool *t);
/* Checks args against the tool's inputSchema: an object, no unknown
 * properties, required ones present, types, enums, integer ranges.
 * Returns 0 or -EINVAL with err naming the property and the fix. */
int cw_mcp_check_args(const struct cw_mcp_tool *t, json_t *args, char *err, size_t errlen);
/* Runs a tool and builds the tools/call result (content, structuredContent,
 * isError). */
json_t *cw_mcp_tool_call(struct cw_mcp_call *c, const struct cw_mcp_tool *t, json_t *args);

/* Progress: sends notifications/progress when the client gave a token.
 * Returns 1 when the call should stop (cancelled or past its deadline). */
int cw_mcp_progress(struct cw_mcp_call *c, double progress, double total, const char *message);
int cw_mcp_should_stop(struct cw_mcp_call *c);

/* ---- caller.c: whose rights a stdio tool runs with ---- */

/* Fills who from fd's peer (SO_PEERCRED) when fd is a unix socket, else from
 * this process's real uid and gid; the capability from /proc. 0 or -errno. */
int cw_mcp_caller_from_fd(int fd, struct cw_mcp_caller *who);
/* 0 when who may ptrace pid as the kernel decides for a caller without
 * privilege (same real, effective and saved uid and gid as the target, and
 * the target dumpable), or who holds CAP_SYS_PTRACE; else -EPERM (-ESRCH:
 * no such process) with err saying why. */
int cw_mcp_may_ptrace(const struct cw_mcp_caller *who, long pid, char *err, size_t errlen);

/* ---- prompts.c ---- */

json_t *cw_mcp_prompts_list(void);
/* Returns the prompts/get result, or NULL with *code and err set. */
json_t *cw_mcp_prompt_get(json_t *params, int *code, char *err, size_t errlen);
json_t *cw_mcp_resources_list(void);
json_t *cw_mcp_resource_read(json_t *params, int *code, char *err, size_t errlen);

#endif
