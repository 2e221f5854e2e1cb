/* The NCCL RAS JSON report read as it arrives (nccl_ras.h): the reply is
 * hostile and may be large (a 4 MiB array of empty objects grows a jansson
 * tree past 300 MB), so the document is never held whole. A small scanner
 * walks its outer levels (the root object, "communicators", each
 * communicator, its "ranks" and "missing_ranks") and hands jansson only
 * the few values it needs, one at a time, each at most CW_RAS_PIECE_MAX
 * bytes: a rank object, a communicator's scalars, "nccl_version", "ras".
 * Everything else is skipped by its brackets without being kept. Memory
 * is bounded by that piece and by struct cw_ras_status, whatever the
 * reply's length; the length itself is the caller's cap. */
#ifndef CW_GPU_RAS_STREAM_H
#define CW_GPU_RAS_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/nccl_ras.h"

#define CW_RAS_PIECE_MAX 16384 /* bytes of one value handed to jansson */

struct cw_ras_stream {
	struct cw_ras_status *out;
	int state, err;
	/* The value being scanned: its kind ('{' or '[' nesting, '"' a
	 * string, 's' a bare scalar), depth, string state, and its bytes when
	 * kept (over CW_RAS_PIECE_MAX: dropped, "over" set). */
	int v_on, v_keep, v_kind, v_instr, v_esc, v_over;
	uint32_t v_depth;
	char piece[CW_RAS_PIECE_MAX];
	size_t plen;
	char key[32];      /* the member being read ("" an unknown one) */
	int in_missing;    /* the rank list is "missing_ranks" */
	unsigned seen_root, seen_comm; /* members met once (duplicates refused) */
	/* The communicator being read. Its ranks behind the most collectives
	 * are found in one pass: when the most grows, every rank before is
	 * behind, so the first listed ranks (first[]) become the list. */
	struct cw_ras_comm comm;
	struct cw_ras_rank first[CW_RAS_MAX_LISTED];
	int nfirst, nranks;
};

/* Starts reading a report into out (cleared). */
void cw_ras_stream_init(struct cw_ras_stream *s, struct cw_ras_status *out);
/* Feeds len more bytes; 0, or -EBADMSG once the report is not the JSON
 * report (out->why says why; later feeds keep failing). */
int cw_ras_stream_feed(struct cw_ras_stream *s, const char *buf, size_t len);
/* The end of the reply. truncated: the caller stopped reading at its cap;
 * what was read is kept and out->truncated set. Returns 0 (out->state
 * ANSWERED) or -EBADMSG (BAD_REPLY, why set). */
int cw_ras_stream_end(struct cw_ras_stream *s, int truncated);

#endif
