/* Shared by the tool files; not an API. */
#ifndef CW_MCP_TOOLS_INT_H
#define CW_MCP_TOOLS_INT_H

#include <sqlite3.h>

#include "mcp/mcp.h"
#include "util/strbuf.h"

#define TOOL_FN(name)                                                                                  \
	int name(struct cw_mcp_call *c, json_t *args, json_t **out, struct strbuf *text, char *err, \
		 size_t errlen)

TOOL_FN(cw_tool_check);
TOOL_FN(cw_tool_trace_summary);
TOOL_FN(cw_tool_causal_chains);
TOOL_FN(cw_tool_explain_call);
TOOL_FN(cw_tool_stacks);
TOOL_FN(cw_tool_run_sql);
TOOL_FN(cw_tool_fleet);
TOOL_FN(cw_tool_export_timeline);
TOOL_FN(cw_tool_where);
TOOL_FN(cw_tool_run_demo);
TOOL_FN(cw_tool_nccl_ranks);
TOOL_FN(cw_tool_slow_requests);

/* Argument readers; the schema check has already run, so types are right. */
const char *tool_str(json_t *args, const char *k);
int64_t tool_int(json_t *args, const char *k, int64_t def);
int tool_bool(json_t *args, const char *k);
/* Argument k as a positive duration into *ns (left alone when absent).
 * Returns 0 or -EINVAL with err. */
int tool_duration(json_t *args, const char *k, uint64_t *ns, char *err, size_t errlen);

/* The configured database, read-only, interrupted when the call is
 * cancelled or passes its deadline. Returns 0 or -errno with err. */
int tool_open_db(struct cw_mcp_call *c, sqlite3 **db, char *err, size_t errlen);
void tool_close_db(sqlite3 *db);
/* since | from/to, as explain's flags: since counts back from the newest
 * data. Returns 0 or -EINVAL with err. */
int tool_window(sqlite3 *db, json_t *args, uint64_t *from, uint64_t *to, char *err, size_t errlen);
/* The same with cw_scope_window's flags (CW_SCOPE_NEWEST_REQUESTS); -errno
 * with err when the newest data cannot be read. */
int tool_window_flags(sqlite3 *db, json_t *args, unsigned flags, uint64_t *from, uint64_t *to, char *err,
		      size_t errlen);
/* "since" alone, as a duration into *ns (0 when absent), for the readers
 * that anchor it themselves (the summary). Returns 0 or -EINVAL with err. */
int tool_since(json_t *args, uint64_t *ns, char *err, size_t errlen);
/* The tenant filter arguments (container, pod, namespace, cgroup) as
 * pids: *npids 0 without a filter, -1 when it matched nothing. Returns 0,
 * -EINVAL with err for a bad value, or -errno. */
int tool_tenant_pids(sqlite3 *db, json_t *args, int64_t **pids, int *npids, char *err, size_t errlen);
/* "after a failure": -ETIMEDOUT/-ECANCELED when the call ran out, else rc. */
int tool_stop_reason(struct cw_mcp_call *c, int rc, const char *what, char *err, size_t errlen);

#endif
