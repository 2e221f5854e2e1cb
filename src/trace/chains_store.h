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
/* An incident in time (analysis/incident.h) found by two passes goes on
 * when the second's part starts at most this long after the first's
 * ended (the boundary's second may fall to either pass). */
#define CW_TRACE_INCIDENT_JOIN_NS (2 * 1000000000ULL)

/* Stores one pass's chains (r; its window from_wall_ns..to_wall_ns) in a
 * savepoint of db: inside a transaction open on db, the rows commit with
 * it; otherwise they are a transaction of their own. evidence: the ids
 * from cw_trace_chains_evidence() of r (NULL: read on db first). A
 * chain of the same incident as a row trace stored whose window ended at
 * most gap_ns before r's began extends that row. The same incident: the
 * same identity (node, kind, op, pid, tid, Python file and line:
 * chain_identity.c) and culprit (its pid); for an incident in time,
 * a row whose incident ended at most CW_TRACE_INCIDENT_JOIN_NS before
 * the chain's began; for a chain over the pass's window, a row of such a
 * chain. A chain over the pass's window is not stored when the pass has
 * an incident in time of the same identity and culprit (the incident's
 * row says it, at its seconds); *added + *extended then fall short of
 * r->count. Extending sets its window end, counts
 * (summed), p99, tail and severity (the worst), and in its JSON
 * last_seen_wall_ns (now_wall_ns), passes and the incident's end; its
 * evidence ids stay the first pass's. Any other chain is a new incident: a row of its own,
 * "stored_by": "trace", with the ids of its kept slow calls. Sets *added
 * and *extended (rows). Returns 0 or -errno. */
int cw_trace_chains_store(sqlite3 *db, char *const *evidence, const struct cw_explain_result *r, uint64_t now_wall_ns,
			  uint64_t gap_ns, int *added, int *extended);

/* The ids of the kept slow calls of each of r's chains (its incident's
 * seconds, or r's window), as JSON text, *out[i] of r->chains[i]: read
 * before the store (on a connection of its own, so that the search over
 * the op's slow calls does not keep the writer waiting). 0 or -errno. */
int cw_trace_chains_evidence(sqlite3 *db, const struct cw_explain_result *r, char ***out);
void cw_trace_chains_evidence_free(char **ids, int n);

#endif
