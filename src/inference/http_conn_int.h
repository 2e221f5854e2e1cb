/* Internal to src/inference/http_conn.c (the table) and http_exchange.c
 * (one connection's requests and responses): the records they share. */
#ifndef CW_INFERENCE_HTTP_CONN_INT_H
#define CW_INFERENCE_HTTP_CONN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "inference/http_conn.h"

#define CW_HTTP_LINE_KEPT 64 /* of a response header line */
#define CW_HTTP_WIN 8	     /* last body bytes kept */
#define CW_HTTP_DROPPED_CACHE 64

enum phase {
	PH_STATUS = 0, /* expecting a status line */
	PH_HEADERS,    /* in the response's header lines */
	PH_BODY,       /* past the header end */
	PH_GARBAGE,    /* no status line: bytes are counted, nothing parsed */
};

struct conn {
	uint32_t pid;
	int32_t fd;
	uint8_t used;
	uint8_t not_http; /* its first bytes were not a request, or it upgraded */
	uint8_t seen_req; /* a request began on it */
	uint8_t active;	  /* a request in progress */
	uint8_t pend_on;  /* a request line being read, in pend */
	uint8_t resp_begun;
	/* Response parsing. */
	uint8_t phase;
	uint8_t line_len, line_over, line_lost;
	uint8_t have_clen, chunked, sse, body_pos_known, win_len;
	int cur_status;
	uint64_t clen, body_bytes;
	uint64_t last_ts; /* newest segment (or open) */
	uint64_t last_in, last_out, last_body_write, last_event;
	uint64_t pend_start, pend_bytes;
	uint64_t pend_lent; /* of pend_bytes, counted in the request in progress */
	uint32_t pend_tid;
	uint16_t pend_len;
	char line[CW_HTTP_LINE_KEPT];
	uint8_t win[CW_HTTP_WIN];
	uint8_t pend[CW_HTTP_HEAD_CAP];
	struct cw_http_request req;
};

struct cw_http_conns {
	size_t max, mask;
	uint32_t *slots; /* index + 1 into conns; 0 empty */
	struct conn *conns;
	uint32_t *free_idx;
	size_t nfree;
	uint64_t next_seq;
	uint64_t dropped[CW_HTTP_DROPPED_CACHE]; /* keys not tracked (full table), so each counts once */
	uint64_t dropped_valid;
	struct cw_http_stats st;
	void (*emit)(void *ctx, const struct cw_http_request *r);
	void *ctx;
};

/* A segment with its captured bytes clamped to what the contract allows. */
struct view {
	const struct cw_http_segment *s;
	const uint8_t *head, *tail;
	size_t hl, tl;
	int gap; /* bytes between head and tail (or after head, no tail) not seen */
};

/* A read (cw_http_conn_in) or write (cw_http_conn_out) on c, in time
 * order, on a connection that is still parsed. */
void cw_http_conn_in(struct cw_http_conns *t, struct conn *c, const struct view *v);
void cw_http_conn_out(struct cw_http_conns *t, struct conn *c, const struct view *v);
/* c's request in progress, if any, ends; at a close, a response running
 * to the close is complete. */
void cw_http_conn_end(struct cw_http_conns *t, struct conn *c, enum cw_http_end end);
void cw_http_conn_end_at_close(struct cw_http_conns *t, struct conn *c);

#endif
