/* Room kept for a trace's last write. A trace that fills its disk still
 * owes the database the counters that say what it lost (store.failed_rows,
 * docs/trace.md); with no byte left, that batch fails like the others. So
 * the trace sets a small file aside beside the database when it starts and
 * deletes it just before that last batch when the disk is full. */
#ifndef CW_STORE_RESERVE_H
#define CW_STORE_RESERVE_H

#include <stddef.h>
#include <stdint.h>

#define CW_STORE_RESERVE_BYTES (1u << 20)

struct cw_store_reserve {
	char path[4096];
	int held; /* the file is ours and in place */
};

/* Creates "<db_path>-reserve" with CW_STORE_RESERVE_BYTES allocated, or
 * under a size cap (cap > 0) the reserve's share of it (footprint.h). Only
 * a file this call creates is used (O_EXCL, no links followed); anything
 * already there is left alone and no room is kept. Returns 0 or -errno
 * (the trace goes on without the reserve). */
int cw_store_reserve_take(struct cw_store_reserve *r, const char *db_path, int64_t cap);
/* Deletes the file, freeing its room; nothing when none is held. */
void cw_store_reserve_release(struct cw_store_reserve *r);

#endif
