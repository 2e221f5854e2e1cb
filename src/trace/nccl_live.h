/* trace_nccl_live: a hang of NCCL collectives noticed while tracing.
 *
 * Fed the stored rows (from trace's view observer): per process, how many
 * collectives it entered (successful or still open), when it entered the
 * last, its usual gap between them and its rank (from ncclCommInitRank).
 * When the highest collective number some processes reached has waited
 * longer than max(20 x their median step, the floor) for the others, it
 * names the processes behind: the live side of explain's nccl_hang (which
 * matches by communicator and sequence number from the store; here one
 * communicator per process is assumed). */
#ifndef CW_TRACE_NCCL_LIVE_H
#define CW_TRACE_NCCL_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "store/writer.h"

#define CW_NCCL_LIVE_MAX 256

struct cw_nccl_live_rank {
	uint32_t pid;
	int rank; /* -1 unknown */
	uint64_t count, last_wall, gap_ns;
};

struct cw_nccl_live {
	struct cw_nccl_live_rank r[CW_NCCL_LIVE_MAX];
	int n;
};

void cw_nccl_live_observe(struct cw_nccl_live *l, const struct cw_event_row *row);
/* Writes one line into buf and returns 1 when collectives wait for
 * processes behind for longer than the threshold at now_wall (floor 0:
 * 10 s); 0 otherwise. */
int cw_nccl_live_hang(const struct cw_nccl_live *l, uint64_t now_wall, uint64_t floor_ns, char *buf, size_t len);

#endif
