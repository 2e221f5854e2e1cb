/* Internals shared by perfetto.c (tracks, slices, counters),
 * perfetto_chains.c (markers and flow arrows) and perfetto_gpu.c. Not a
 * public API. */
#ifndef CW_EXPORT_PERFETTO_INT_H
#define CW_EXPORT_PERFETTO_INT_H

#include <sqlite3.h>
#include <stdint.h>

#include "export/emitted.h"
#include "export/perfetto.h"
#include "export/trace_json.h"
#include "util/u64map.h"

/* Lanes of one thread: lane l of tid t is track t + l * CW_LANE_STRIDE.
 * Linux tids are below 2^22 (PID_MAX_LIMIT on 64-bit). A thread's calls
 * and off-CPU intervals nest on the first lanes; its block I/O requests,
 * which overlap freely (readahead keeps dozens in flight), on lanes of
 * their own after them. Slices beyond CW_MAX_LANES are left out, counted. */
#define CW_LANE_STRIDE (1LL << 22)
#define CW_MAX_LANES CW_EXPORT_MAX_LANES
/* Keys of written slices in ctx.emitted: events by id, off-CPU intervals
 * by id with this bit set. */
#define CW_KEY_OFFCPU (1ULL << 62)

struct pf_node {
	char name[64];
	int pid;            /* trace process id: 1 + index in name order */
	int64_t offset_ns;  /* node clock minus reference clock */
	int has_offset;
	int64_t from, to;   /* window on the node's own clock */
};

struct pf_ctx {
	sqlite3 *db;
	const struct cw_export_opts *o;
	struct cw_export_stats *st;
	struct cw_tracew w;
	struct pf_node *nodes;
	int nnodes;
	int64_t base;        /* reference-clock ns of ts 0 */
	struct pf_emitted emitted; /* key -> node index << 32 | trace tid */
	struct u64map pids;    /* the tenant filter's pids (o->npids > 0) */
	char *err;
	size_t errlen;
};

/* Trace ts (us) of a wall ns on node n. Inline: every emitter of the
 * export (slices, chains, GPU) stamps with it. */
static inline json_t *pf_ts(const struct pf_ctx *c, const struct pf_node *n, int64_t wall_ns)
{
	return cw_trace_us(wall_ns - n->offset_ns - c->base);
}

/* perfetto_gpu.c: GPU counters and Xid markers of node ni. */
int pf_emit_gpu(struct pf_ctx *c, int ni);

/* perfetto_requests.c: node ni's inference requests, a track per
 * connection, a slice per request and an instant at its TTFT. */
int pf_emit_requests(struct pf_ctx *c, int ni);

/* perfetto_chains.c: markers and flows of the explain engine's chains. */
int pf_emit_chains(struct pf_ctx *c);

#endif
