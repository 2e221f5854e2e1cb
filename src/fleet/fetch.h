/* Tables fetched from every agent of a fleet into a local store. */
#ifndef CW_FLEET_FETCH_H
#define CW_FLEET_FETCH_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet/fanout.h"

/* A private store in a new directory /tmp/causeway-TAG-XXXXXX, as file
 * name: what fleet answers are gathered into, removed with its directory
 * by close (which a failed open needs too). */
struct cw_store;
struct cw_fleet_tmp {
	char dir[64];
	char path[128];
	struct cw_store *st;
};

int cw_fleet_tmp_open(struct cw_fleet_tmp *t, const char *tag, const char *name, char *err, size_t errlen);
void cw_fleet_tmp_close(struct cw_fleet_tmp *t);

/* One table fetched from every agent. The SELECT's columns are, in order,
 * the columns of the local INSERT after node (the names are ours, never
 * the agents'). ?1/?2 are the window (wall ns, or seconds for the
 * aggregates), ?3 the per-node row budget. */
struct cw_fleet_fetch {
	const char *select;
	const char *insert;
	int ncols;
	int hex_col; /* a BLOB that the query API returns as hex, -1 none */
	int nparams; /* the agents' query API wants exactly the parameters used */
	/* Paged by row id: bounds answers one row (min id, max id) per
	 * agent (bounds_old for agents of an older schema when it fails),
	 * and select takes ?3 < id <= ?4 besides the window ?1, ?2, so each
	 * page is one id range no larger than the agent's row cap: every row
	 * comes, in as many pages as needed, and the client holds one page
	 * per agent at a time. NULL: one answer, up to the limit. */
	const char *bounds;
	const char *bounds_old;
};

/* The fan-out warnings seen so far; fn (may be NULL) hears each once. */
struct cw_fleet_warns {
	char **v;
	int n;
	void (*fn)(void *arg, const char *msg);
	void *arg;
};

/* err = "none of the N nodes answered: <each node's warning>; ...". */
void cw_fleet_none_answered(const struct cw_fleet_result *r, int n, char *err, size_t errlen);

void cw_fleet_warns_add(struct cw_fleet_warns *w, const struct cw_fleet_result *r);
void cw_fleet_warns_free(struct cw_fleet_warns *w);

/* Fetches f (parameters a, b, limit; a paged f: every row of the window a,
 * b, limit unused) from every agent of fo into db, a transaction a page; events: the rows carry the six py_stacks columns after
 * f's, interned locally. Returns 0 or -errno with err set. */
int cw_fleet_fetch_rows(sqlite3 *db, const struct cw_fleet_opts *fo, const struct cw_fleet_fetch *f, int64_t a,
			int64_t b, int64_t limit, int events, struct cw_fleet_warns *w, char *err, size_t errlen);

/* One table from every agent into db: select runs on each agent (its
 * columns those of insert after node; ?1, ?2, ?3 are a, b, limit, the
 * first nparams of them passed), insert stores each row with the node as
 * ?1. Returns 0 or -errno with err set. */
int cw_fleet_fetch_into(sqlite3 *db, const struct cw_fleet_opts *fo, const char *select, const char *insert, int ncols,
			int nparams, int64_t a, int64_t b, int64_t limit, void (*warn)(void *arg, const char *msg),
			void *warn_arg, char *err, size_t errlen);

#endif
