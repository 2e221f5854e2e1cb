/* How trace stores the chains of a pass (docs/trace.md, "Chains while
 * tracing"): one row per incident, not one per chain per pass. */
#ifndef CW_TRACE_CHAINS_STORE_H
#define CW_TRACE_CHAINS_STORE_H

#include <sqlite3.h>
#include <stdint.h>

#include "analysis/explain.h"
#include "trace/chains.h"

/* A stored chain goes on while passes keep finding it: a row is continued
 * by a chain of the same identity whose pass starts at most this long
 * after the row's window ended (two passes without it). */
#define CW_TRACE_CHAIN_GAP_NS (2 * CW_TRACE_CHAIN_PERIOD_NS)

/* Stores one pass's chains (r; its window from_wall_ns..to_wall_ns). A
 * chain of the same identity (node, kind, op, pid, tid, Python file and
 * line: chain_identity.c) as a row trace stored whose window ended at
 * most gap_ns before r's began extends that row: its window end, counts
 * (summed), p99, tail and severity (the worst), and in its JSON
 * last_seen_wall_ns (now_wall_ns) and passes; its evidence ids stay the
 * first pass's. Any other chain is a new incident: a row of its own,
 * "stored_by": "trace", with the ids of its kept slow calls. Sets *added
 * and *extended (rows). Returns 0 or -errno. */
int cw_trace_chains_store(sqlite3 *db, const struct cw_explain_result *r, uint64_t now_wall_ns, uint64_t gap_ns,
			  int *added, int *extended);

#endif
