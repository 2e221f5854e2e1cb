/* http_track: the pipeline's side of trace --inference. Socket-call
 * records of a traced server (struct cw_http_io) go through the HTTP/1.1
 * connection parser (inference/http_conn.h); each request it ends
 * becomes a row of the requests table. */
#ifndef CW_PIPELINE_HTTP_TRACK_H
#define CW_PIPELINE_HTTP_TRACK_H

#include <stdint.h>

#include "bpf/events.h"
#include "store/writer.h"

/* How long a request in progress may move nothing before it is stored as
 * it stands (end_reason "idle"): longer than any pause between a
 * streamed answer's tokens. */
#define CW_HTTP_IDLE_NS (120ull * 1000000000ull)
#define CW_HTTP_MAX_CONNS 16384

struct cw_http_track;

int cw_http_track_new(struct cw_http_track **out, struct cw_writer *w);
void cw_http_track_free(struct cw_http_track *t);
void cw_http_track_set_clock(struct cw_http_track *t, int64_t mono_to_wall_ns);
/* One record; -EINVAL for a malformed one (counted). */
int cw_http_track_record(struct cw_http_track *t, const struct cw_http_io *r);
/* A loopback client port of causeway's own (the engine scraper): the
 * requests of connections accepted from it are not stored (counted in
 * http.own_requests). The last 64 are kept. */
void cw_http_track_own_client(struct cw_http_track *t, uint16_t port);
/* What the session saw, for trace's closing line. */
struct cw_http_track_totals {
	uint64_t stored, own, not_http, tls, dropped;
};
void cw_http_track_totals(const struct cw_http_track *t, struct cw_http_track_totals *out);
/* The process exited: its connections end at the next tick a second on
 * (its last calls may be read after its exit: another ring). */
void cw_http_track_exit(struct cw_http_track *t, uint32_t pid, uint64_t ts_ns);
/* Requests idle past CW_HTTP_IDLE_NS end; counters are set on the writer
 * ("http.*"). */
void cw_http_track_tick(struct cw_http_track *t, uint64_t now_ns);
/* Every request in progress ends (the session stops). */
void cw_http_track_finish(struct cw_http_track *t, uint64_t now_ns);

#endif
