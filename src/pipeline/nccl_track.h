/* nccl_track: what the pipeline learns from NCCL calls beyond the event
 * row. Communicators are followed from their creation (an init, which
 * carries the hash of the ncclUniqueId every rank shares, or a split of a
 * known parent) to their destruction, and every collective and
 * point-to-point call gets its sequence number on its communicator, so
 * the n-th collective of one rank meets the n-th of every other rank on
 * any node (analysis/rules/nccl_arrival.c). Rows go to nccl_comms and
 * nccl_calls through the writer. */
#ifndef CW_PIPELINE_NCCL_TRACK_H
#define CW_PIPELINE_NCCL_TRACK_H

#include <stdint.h>

#include "bpf/events.h"
#include "store/writer.h"

struct cw_nccl_track;

int cw_nccl_track_new(struct cw_nccl_track **out, struct cw_writer *w);
void cw_nccl_track_free(struct cw_nccl_track *t);

/* One finished (has_ret) or unfinished NCCL call, after its event row.
 * wall_ns is the entry's wall clock. Returns 0 or -errno. */
int cw_nccl_track_call(struct cw_nccl_track *t, const struct cw_call_entry *e, uint64_t wall_ns,
		       uint64_t end_ns, int has_ret, int64_t ret);

/* A synchronization of thread tid ended (has_ret) or was stored
 * unfinished: the collectives it waited for are complete (or never were)
 * and their rows are written. */
int cw_nccl_track_sync(struct cw_nccl_track *t, uint32_t tid, uint64_t wall_ns, uint64_t dur_ns, int has_ret);

/* The call's payload: count x element size (the per-rank buffer the
 * count argument describes), -1 when the op moves none or the type is
 * unknown. */
int64_t cw_nccl_call_bytes(unsigned op, int64_t count, int64_t dtype);

/* The communicator id of a split: every rank computes the same from its
 * parent's id, the split's ordinal on the parent and the color. */
uint64_t cw_nccl_split_id(uint64_t parent_id, uint64_t ordinal, int64_t color);

#endif
