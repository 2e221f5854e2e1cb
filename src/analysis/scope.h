/* The scope of a read: its time window and its tenant selection, from the
 * raw strings a front end was given (the CLI's flags, the API's query
 * parameters, the MCP tools' arguments). One parser and one resolver
 * behind explain, export, query, the API routes and the MCP tools, so each
 * answers the same input with the same window and the same words; the
 * front ends keep only their transport (a usage exit, a 400, a tool
 * error).
 *
 *   struct cw_scope s = { .names = CW_SCOPE_FLAGS, .since = ..., .from = ..., .to = ... };
 *   cw_scope_tenant(&s, "pod", "web-1", err, len);   per tenant filter given
 *   cw_scope_parse(&s, err, len);                    no database needed
 *   cw_scope_window(db, &s, 0);                      since -> [from, to]
 *   cw_scope_select(db, &s);                         tenant filters -> pids
 *   cw_scope_release(&s);
 */
#ifndef CW_ANALYSIS_SCOPE_H
#define CW_ANALYSIS_SCOPE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "tenant/tenant.h"

/* How errors name the inputs: --since (CLI flags) or "since" (API
 * parameters, MCP arguments). The words are the same. */
enum cw_scope_names { CW_SCOPE_PARAMS = 0, CW_SCOPE_FLAGS = 1 };

/* cw_scope_window: since counts back from the newer of the last call and
 * the last inference request's start (a server traced with --inference
 * alone has no calls to count from; /api/v1/requests, slow_requests). */
#define CW_SCOPE_NEWEST_REQUESTS 1u

struct cw_scope {
	/* In: NULL when not given. */
	enum cw_scope_names names;
	const char *since, *from, *to;
	struct cw_tenant_filter tf[CW_TENANT_FILTERS_MAX];
	int ntf;
	/* Out of cw_scope_parse: since as ns (0: none); from/to as wall ns
	 * (0: open). cw_scope_window replaces from/to when since was given
	 * and the store holds data. */
	uint64_t since_ns, from_ns, to_ns;
	/* Out of cw_scope_select (malloc'd; cw_scope_release frees): npids
	 * 0 without a filter, -1 when the filters matched no process, else
	 * the count, as explain and the summary take them. */
	int64_t *pids;
	int npids;
};

/* Adds tenant filter name=value (a flag "--pod", a parameter "pod",
 * "slurm_job"). Returns 0, -ENOENT when name is not a tenant filter, or
 * -EINVAL with err ("bad --pod ..." or "bad pod ..." by s->names). */
int cw_scope_tenant(struct cw_scope *s, const char *name, const char *value, char *err, size_t errlen);

/* Checks since/from/to and fills since_ns, from_ns, to_ns. since is a
 * positive duration and excludes from/to; a time is RFC 3339, Unix seconds
 * or wall ns (13-19 digits: what the answers carry), from 1970 to 2262;
 * to must be after from. Returns 0 or -EINVAL with err. */
int cw_scope_parse(struct cw_scope *s, char *err, size_t errlen);

/* Anchors since on the newest data of db (flags: CW_SCOPE_NEWEST_REQUESTS):
 * to = newest, from = newest - since (1 when since reaches past the
 * epoch: 0 would mean open). An empty store, or no since, keeps the window
 * as parsed (an empty store has no "last DURATION": it is read whole).
 * Returns 0 or -errno (a read error). */
int cw_scope_window(sqlite3 *db, struct cw_scope *s, unsigned flags);

/* The processes the tenant filters select, into s->pids/s->npids.
 * Returns 0 or -errno. */
int cw_scope_select(sqlite3 *db, struct cw_scope *s);

void cw_scope_release(struct cw_scope *s);

#endif
