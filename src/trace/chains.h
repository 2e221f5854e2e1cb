/* Chains computed by the agent as it runs (docs/trace.md, "Chains while
 * tracing"): every CW_TRACE_CHAIN_PERIOD_NS and at the session's end, the
 * causal engine over the stretch since the last pass, stored in the
 * chains table with the ids of the kept calls they rest on, so that the
 * store keeps the diagnosis after the size cap prunes the raw rows. */
#ifndef CW_TRACE_CHAINS_H
#define CW_TRACE_CHAINS_H

#include <stdint.h>

#define CW_TRACE_CHAIN_PERIOD_NS (60ULL * 1000000000ULL)
/* Kept calls named per stored chain (evidence_ids.calls). */
#define CW_TRACE_CHAIN_IDS 16

struct trace;

/* When: the period's (a pass only once it is due), the session's end (a
 * pass when the session ran one before or pruned rows), on demand
 * (SIGUSR1: a pass now). */
#define CW_TRACE_CHAINS_DUE 0
#define CW_TRACE_CHAINS_END 1
#define CW_TRACE_CHAINS_NOW 2

/* Analyses [the previous pass's end, now_wall_ns] on a connection of its
 * own, as when says; stores what it finds. Never fails the trace: a pass
 * that cannot run is counted. */
void trace_chains_pass(struct trace *t, uint64_t now_wall_ns, int when);
void trace_chains_close(struct trace *t);

#endif
