/* Rare kernel-side events (OOM kills, TCP retransmits, graph captures)
 * of one node and op in a window, without a scan of events. */
#ifndef CW_STORE_RARE_EVENTS_H
#define CW_STORE_RARE_EVENTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "store/layout.h"

/* One rare kernel-side event row. */
struct cw_rare_event {
	int64_t id;
	uint64_t wall_ns, mono_ns, dur_ns;
	int64_t pid, tid;
	uint64_t cgroup_id;
	char comm[32];
	int64_t arg[4];
	int64_t bytes;
	char detail[160];
	int64_t py_stack_id;
};

/* Events of (source, op) on node with wall_ns in [from_wall, to_wall], at
 * most max, in time order, through the op's partial index (schema v3) or
 * the aggregates' seconds (never a scan of the window). Retransmits read
 * through their index carry only times, pid and detail. *out is
 * malloc'd. Returns the count or -errno. */
int cw_rare_events_load(sqlite3 *db, const char *node, const char *source, const char *op, uint64_t from_wall,
			uint64_t to_wall, size_t max, struct cw_rare_event **out);

#endif
