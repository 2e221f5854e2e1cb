/* Whether an explain request's filters and window match any data, so that
 * "no problems found" is only ever said about data that was there: a pid,
 * pod or window that matches nothing is its own answer (exit
 * CW_EXIT_NOMATCH on the command line; an error over the API and MCP). */
#ifndef CW_ANALYSIS_EXPLAIN_MATCH_H
#define CW_ANALYSIS_EXPLAIN_MATCH_H

#include <sqlite3.h>
#include <stddef.h>

#include "analysis/chain.h"
#include "analysis/explain.h"

/* After cw_explain_run: 1 when o's filters or window matched no data, with
 * why filled ("no process 99999 in the store", ...); 0 when they matched;
 * -errno on a database error. */
int cw_explain_unmatched(sqlite3 *db, const struct cw_explain_opts *o, const struct cw_explain_result *r, char *why,
			 size_t len);

#endif
