/* HTTP/1.1 requests from what a server's socket system calls moved.
 *
 * The kernel side (bpf/http.bpf.c) sees each read/recv and write/send of a
 * server's accepted connections: when it returned, which thread, how many
 * bytes, and a copy of their first CW_HTTP_HEAD_CAP and last
 * CW_HTTP_TAIL_CAP bytes. This module turns that sequence, per connection,
 * into requests: method, path, status, bytes, time to the first response
 * body bytes (TTFT for streamed answers) and the gaps between body writes
 * (inter-token latency), without ever holding more than a fixed amount per
 * connection. Everything it reads comes from the wire: hostile input.
 *
 * Pure: no I/O, no clock; times are what the caller passes. */
#ifndef CW_INFERENCE_HTTP_CONN_H
#define CW_INFERENCE_HTTP_CONN_H

#include <stddef.h>
#include <stdint.h>

#define CW_HTTP_HEAD_CAP 512 /* bytes of a segment's start the kernel copies */
#define CW_HTTP_TAIL_CAP 16  /* and of its end, when it is longer */
#define CW_HTTP_METHOD_MAX 16
#define CW_HTTP_PATH_MAX 256 /* path kept (query string never kept: it can hold secrets) */
/* Body writes closer than this to the previous one are one event (a
 * chunked answer's size line, data and CRLF may be three writes, microseconds
 * apart; tokens of even a tiny model on a CPU come 0.3 ms or more apart). */
#define CW_HTTP_WRITE_MERGE_NS 200000ull

enum cw_http_dir { CW_HTTP_IN = 0, CW_HTTP_OUT = 1 };

/* One system call's bytes on a connection. */
struct cw_http_segment {
	uint64_t ts_ns; /* when the call returned, monotonic */
	uint32_t tid;
	enum cw_http_dir dir;
	uint64_t len;          /* bytes the call moved (> 0) */
	const uint8_t *head;   /* its first head_len bytes, head_len <= min(len, CW_HTTP_HEAD_CAP) */
	size_t head_len;
	const uint8_t *tail;   /* its last tail_len bytes when len > head_len (they do not repeat head's) */
	size_t tail_len;
};

/* How a request's record ended. */
enum cw_http_end {
	CW_HTTP_END_COMPLETE = 0, /* the response's length (Content-Length, last chunk, no body) was reached */
	CW_HTTP_END_NEXT,         /* the next request on the connection began */
	CW_HTTP_END_CLOSED,       /* the connection closed */
	CW_HTTP_END_IDLE,         /* nothing moved for the idle limit (cw_http_conns_tick) */
	CW_HTTP_END_FLUSH,        /* the session ended (cw_http_conns_flush) */
};

struct cw_http_request {
	uint32_t pid;
	int32_t fd;
	uint64_t conn_seq;      /* the connection's number in its table (1, 2, ...) */
	uint64_t start_ns;      /* the first request bytes were read */
	uint64_t first_byte_ns; /* the first response bytes were written; 0 none */
	uint64_t first_body_ns; /* the first response body bytes were written (TTFT); 0 none */
	uint64_t end_ns;        /* the last response bytes were written; start_ns's last read with no response */
	uint32_t tid;           /* read the request */
	uint32_t resp_tid;      /* wrote the response's first bytes; 0 none */
	char method[CW_HTTP_METHOD_MAX]; /* printable ASCII, NUL-terminated; "" unknown */
	char path[CW_HTTP_PATH_MAX];     /* printable ASCII up to '?', NUL-terminated; truncated when longer */
	int status;                      /* final status (1xx skipped); 0 none seen */
	uint64_t bytes_in, bytes_out;
	int streamed;          /* chunked or text/event-stream */
	uint32_t body_events;  /* body writes, merged within CW_HTTP_WRITE_MERGE_NS */
	uint64_t itl_max_ns;   /* largest gap between body events */
	uint64_t itl_sum_ns;   /* sum of the gaps (mean = sum / (body_events - 1)) */
	enum cw_http_end end;
};

/* Why a connection stopped being parsed; counted, never silent. */
struct cw_http_stats {
	uint64_t segments;        /* fed */
	uint64_t requests;        /* emitted */
	uint64_t not_http;        /* connections whose first bytes were not an HTTP/1.x request (TLS, HTTP/2, binary) */
	uint64_t tls;             /* of those, a TLS handshake (the server terminates TLS: not seen) */
	uint64_t conns_dropped;   /* connections not tracked: the table was full */
	uint64_t out_of_order;    /* segments older than their connection's last one, ignored */
};

struct cw_http_conns;

/* A table of at most max_conns connections keyed by (pid, fd); requests
 * go to emit as they end. Returns NULL on allocation failure. */
struct cw_http_conns *cw_http_conns_new(size_t max_conns,
					void (*emit)(void *ctx, const struct cw_http_request *r), void *ctx);
void cw_http_conns_free(struct cw_http_conns *t);

/* A connection was accepted (or found open at start): any state kept for
 * (pid, fd) ends (END_CLOSED) and a fresh one begins. */
void cw_http_conns_open(struct cw_http_conns *t, uint32_t pid, int32_t fd, uint64_t ts_ns);
/* Bytes moved on (pid, fd); a connection not opened is opened here. */
void cw_http_conns_feed(struct cw_http_conns *t, uint32_t pid, int32_t fd, const struct cw_http_segment *s);
/* (pid, fd) closed: its request in progress ends (END_CLOSED or COMPLETE). */
void cw_http_conns_close(struct cw_http_conns *t, uint32_t pid, int32_t fd, uint64_t ts_ns);
/* Every connection of pid (the process exited). */
void cw_http_conns_close_pid(struct cw_http_conns *t, uint32_t pid, uint64_t ts_ns);
/* Requests whose connection moved nothing for idle_ns end (END_IDLE);
 * idle connections with no request in progress are forgotten. */
void cw_http_conns_tick(struct cw_http_conns *t, uint64_t now_ns, uint64_t idle_ns);
/* Every request in progress ends (END_FLUSH); the table empties. */
void cw_http_conns_flush(struct cw_http_conns *t, uint64_t now_ns);
void cw_http_conns_stats(const struct cw_http_conns *t, struct cw_http_stats *out);

#endif
