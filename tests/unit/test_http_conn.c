/* HTTP/1.1 requests from socket segments (src/inference/http_conn.c):
 * keep-alive, streamed answers (TTFT, merged writes, inter-token gaps),
 * interim and body-less responses, request lines split over reads, what
 * is not HTTP, captures shorter than the bytes, and how records end
 * (close, idle, flush, a full table). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inference/http_conn.h"

#define MS 1000000ull
#define PID 42

static struct cw_http_request got[16];
static size_t ngot;

static void collect(void *ctx, const struct cw_http_request *r)
{
	(void)ctx;
	assert_true(ngot < 16);
	got[ngot++] = *r;
}

static struct cw_http_conns *table(size_t max)
{
	struct cw_http_conns *t = cw_http_conns_new(max, collect, NULL);

	assert_non_null(t);
	ngot = 0;
	memset(got, 0, sizeof(got));
	return t;
}

/* One system call moving bytes[0..len): head and tail as the kernel side
 * captures them. */
static void seg(struct cw_http_conns *t, int32_t fd, enum cw_http_dir dir, uint64_t ts, const void *bytes, size_t len)
{
	struct cw_http_segment s = { .ts_ns = ts, .tid = dir == CW_HTTP_IN ? 7 : 8, .dir = dir, .len = len };

	s.head = bytes;
	s.head_len = len < CW_HTTP_HEAD_CAP ? len : CW_HTTP_HEAD_CAP;
	if (len > s.head_len) {
		size_t tl = len - s.head_len < CW_HTTP_TAIL_CAP ? len - s.head_len : CW_HTTP_TAIL_CAP;

		s.tail = (const uint8_t *)bytes + len - tl;
		s.tail_len = tl;
	}
	cw_http_conns_feed(t, PID, fd, &s);
}

static void in(struct cw_http_conns *t, int32_t fd, uint64_t ts, const char *text)
{
	seg(t, fd, CW_HTTP_IN, ts, text, strlen(text));
}

static void out(struct cw_http_conns *t, int32_t fd, uint64_t ts, const char *text)
{
	seg(t, fd, CW_HTTP_OUT, ts, text, strlen(text));
}

static struct cw_http_stats stats(const struct cw_http_conns *t)
{
	struct cw_http_stats st;

	cw_http_conns_stats(t, &st);
	return st;
}

static void test_keepalive_content_length(void **state)
{
	struct cw_http_conns *t = table(8);
	static const char *paths[] = { "/a", "/bb", "/ccc" };
	char req[64];
	size_t i;

	(void)state;
	cw_http_conns_open(t, PID, 5, 1);
	for (i = 0; i < 3; i++) {
		uint64_t base = (i + 1) * 100 * MS;

		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", paths[i]);
		in(t, 5, base, req);
		out(t, 5, base + 2 * MS, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello");
		assert_int_equal(ngot, i); /* 5 of 10 body bytes */
		out(t, 5, base + 3 * MS, "world");
		assert_int_equal(ngot, i + 1);
		assert_string_equal(got[i].method, "GET");
		assert_string_equal(got[i].path, paths[i]);
		assert_int_equal(got[i].status, 200);
		assert_int_equal(got[i].end, CW_HTTP_END_COMPLETE);
		assert_int_equal(got[i].conn_seq, 1);
		assert_int_equal(got[i].start_ns, base);
		assert_int_equal(got[i].first_byte_ns, base + 2 * MS);
		assert_int_equal(got[i].first_body_ns, base + 2 * MS);
		assert_int_equal(got[i].end_ns, base + 3 * MS);
		assert_int_equal(got[i].bytes_in, strlen(req));
		assert_int_equal(got[i].bytes_out, 39 + 5 + 5);
		assert_int_equal(got[i].tid, 7);
		assert_int_equal(got[i].resp_tid, 8);
		assert_int_equal(got[i].pid, PID);
		assert_int_equal(got[i].fd, 5);
		assert_int_equal(got[i].streamed, 0);
		assert_int_equal(got[i].body_events, 2);
	}
	cw_http_conns_close(t, PID, 5, 1000 * MS);
	assert_int_equal(ngot, 3); /* nothing in progress: nothing more */
	assert_int_equal(stats(t).requests, 3);
	cw_http_conns_free(t);
}

static const char sse_head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			       "Transfer-Encoding: chunked\r\n\r\n";
static const char sse_chunk[] = "e\r\ndata: {\"t\":1}\n\n\r\n";

static void test_sse_chunked_ttft_itl(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 3, 1000 * MS, "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
	out(t, 3, 1050 * MS, sse_head); /* headers alone: no body yet */
	out(t, 3, 1300 * MS, sse_chunk);
	out(t, 3, 1320 * MS, sse_chunk);
	out(t, 3, 1350 * MS, sse_chunk);
	assert_int_equal(ngot, 0);
	out(t, 3, 1350 * MS + CW_HTTP_WRITE_MERGE_NS / 2, "0\r\n\r\n"); /* within the merge window */
	assert_int_equal(ngot, 1);
	assert_string_equal(got[0].method, "POST");
	assert_string_equal(got[0].path, "/v1/chat/completions");
	assert_int_equal(got[0].first_byte_ns, 1050 * MS);
	assert_int_equal(got[0].first_body_ns - got[0].start_ns, 300 * MS); /* TTFT */
	assert_int_equal(got[0].body_events, 3);
	assert_int_equal(got[0].itl_max_ns, 30 * MS);
	assert_int_equal(got[0].itl_sum_ns, 50 * MS);
	assert_int_equal(got[0].streamed, 1);
	assert_int_equal(got[0].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(got[0].end_ns, 1350 * MS + CW_HTTP_WRITE_MERGE_NS / 2);
	assert_int_equal(got[0].bytes_out, strlen(sse_head) + 3 * strlen(sse_chunk) + 5);
	/* An event stream running to the close (no chunked framing). */
	in(t, 3, 2000 * MS, "GET /events HTTP/1.1\r\n\r\n");
	out(t, 3, 2001 * MS,
	    "HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream; charset=utf-8\r\n"
	    "Connection: close\r\n\r\n");
	out(t, 3, 2100 * MS, "data: 1\n\n");
	out(t, 3, 2200 * MS, "data: 2\n\n");
	cw_http_conns_close(t, PID, 3, 2300 * MS);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[1].streamed, 1);
	assert_int_equal(got[1].body_events, 2);
	assert_int_equal(got[1].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(got[1].end_ns, 2200 * MS);
	cw_http_conns_free(t);
}

/* A chunk's size line, data and CRLF written separately are one event;
 * the next chunk 20 ms later is another; "0\r\n" and "\r\n" apart end it. */
static void test_chunk_writes_merged(void **state)
{
	struct cw_http_conns *t = table(8);
	uint64_t ts = 10 * MS;
	int c;

	(void)state;
	in(t, 3, ts, "GET /stream HTTP/1.1\r\n\r\n");
	out(t, 3, ts + MS, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (c = 0; c < 2; c++) {
		ts += 20 * MS;
		out(t, 3, ts, "5\r\n");
		out(t, 3, ts + CW_HTTP_WRITE_MERGE_NS / 2, "hello");
		out(t, 3, ts + CW_HTTP_WRITE_MERGE_NS, "\r\n");
	}
	/* Writes 0.6 of the merge window apart chain into one event (2.4
	 * windows long). */
	for (c = 0; c < 5; c++)
		out(t, 3, ts + 10 * MS + c * (CW_HTTP_WRITE_MERGE_NS * 6 / 10), "1\r\nx\r\n");
	out(t, 3, ts + 20 * MS, "0\r\n");
	assert_int_equal(ngot, 0);
	out(t, 3, ts + 20 * MS + 100, "\r\n");
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].body_events, 4);
	assert_int_equal(got[0].itl_max_ns, 20 * MS);
	assert_int_equal(got[0].itl_sum_ns, 40 * MS); /* 30, 50, 60 (a chain), 70 ms */
	assert_int_equal(got[0].first_body_ns, 30 * MS);
	assert_int_equal(got[0].end, CW_HTTP_END_COMPLETE);
	/* A chunk whose data ends in "10\r\n\r\n" is not the last chunk. */
	in(t, 3, 200 * MS, "GET /s2 HTTP/1.1\r\n\r\n");
	out(t, 3, 201 * MS, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nx=10\r\n\r\n");
	assert_int_equal(ngot, 1);
	cw_http_conns_free(t);
}

static void test_100_continue(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 4, 10 * MS, "PUT /upload HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
	out(t, 4, 11 * MS, "HTTP/1.1 100 Continue\r\n\r\n");
	in(t, 4, 12 * MS, "DATA");
	out(t, 4, 13 * MS, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].status, 201);
	assert_int_equal(got[0].first_byte_ns, 11 * MS);
	assert_int_equal(got[0].first_body_ns, 13 * MS);
	assert_int_equal(got[0].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(got[0].bytes_in, 22 + 22 + 19 + 2 + 4);
	/* The interim and the final answer in one write. */
	in(t, 4, 20 * MS, "POST /x HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
	out(t, 4, 21 * MS, "HTTP/1.1 100 Continue\r\nX: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
	assert_int_equal(ngot, 2);
	assert_string_equal(got[1].method, "POST"); /* "DATA" was the first one's body */
	assert_int_equal(got[1].status, 200);
	assert_int_equal(got[1].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(got[1].first_body_ns, 21 * MS);
	cw_http_conns_free(t);
}

static void test_head_and_204(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 4, 10 * MS, "HEAD /big HTTP/1.1\r\n\r\n");
	out(t, 4, 11 * MS, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
	assert_int_equal(ngot, 1);
	assert_string_equal(got[0].method, "HEAD");
	assert_int_equal(got[0].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(got[0].first_body_ns, 0);
	assert_int_equal(got[0].body_events, 0);
	in(t, 4, 20 * MS, "DELETE /item/1 HTTP/1.1\r\n\r\n");
	out(t, 4, 21 * MS, "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n");
	assert_int_equal(ngot, 2);
	assert_int_equal(got[1].status, 204);
	assert_int_equal(got[1].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(got[1].end_ns, 21 * MS);
	in(t, 4, 30 * MS, "GET /c HTTP/1.1\r\n\r\n");
	out(t, 4, 31 * MS, "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n");
	assert_int_equal(ngot, 3);
	assert_int_equal(got[2].end, CW_HTTP_END_COMPLETE);
	cw_http_conns_free(t);
}

static void test_slowloris_one_byte_reads(void **state)
{
	struct cw_http_conns *t = table(8);
	static const char req[] = "GET /slow?k=v HTTP/1.1\r\nHost: x\r\n\r\n";
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(req) - 1; i++)
		seg(t, 6, CW_HTTP_IN, (100 + i) * MS, req + i, 1);
	out(t, 6, 500 * MS, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	assert_int_equal(ngot, 1);
	assert_string_equal(got[0].method, "GET");
	assert_string_equal(got[0].path, "/slow");
	assert_int_equal(got[0].start_ns, 100 * MS);
	assert_int_equal(got[0].bytes_in, sizeof(req) - 1);
	assert_int_equal(got[0].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(stats(t).not_http, 0);
	/* The same on a keep-alive connection's second request. */
	in(t, 6, 600 * MS, "PO");
	in(t, 6, 601 * MS, "ST /b HTTP/1.0\r\n\r\n");
	cw_http_conns_close(t, PID, 6, 700 * MS);
	assert_int_equal(ngot, 2);
	assert_string_equal(got[1].method, "POST");
	assert_string_equal(got[1].path, "/b");
	assert_int_equal(got[1].start_ns, 600 * MS);
	assert_int_equal(got[1].end_ns, 601 * MS);
	cw_http_conns_free(t);
}

static void test_tls_client_hello(void **state)
{
	struct cw_http_conns *t = table(8);
	static const uint8_t hello[] = { 0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03 };

	(void)state;
	cw_http_conns_open(t, PID, 9, 1);
	seg(t, 9, CW_HTTP_IN, 2, hello, sizeof(hello));
	out(t, 9, 3, "HTTP/1.1 200 OK\r\n\r\n");
	in(t, 9, 4, "GET / HTTP/1.1\r\n\r\n"); /* ignored: the connection is not HTTP */
	cw_http_conns_close(t, PID, 9, 5);
	assert_int_equal(ngot, 0);
	assert_int_equal(stats(t).not_http, 1);
	assert_int_equal(stats(t).tls, 1);
	/* Reopened: parsed again. */
	cw_http_conns_open(t, PID, 9, 6);
	in(t, 9, 7, "GET / HTTP/1.1\r\n\r\n");
	cw_http_conns_close(t, PID, 9, 8);
	assert_int_equal(ngot, 1);
	cw_http_conns_free(t);
}

static void test_http2_preface(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 9, 2, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
	cw_http_conns_close(t, PID, 9, 5);
	assert_int_equal(ngot, 0);
	assert_int_equal(stats(t).not_http, 1);
	assert_int_equal(stats(t).tls, 0);
	cw_http_conns_free(t);
}

static void test_response_without_status_line(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 2, 10 * MS, "GET /g HTTP/1.1\r\n\r\n");
	out(t, 2, 11 * MS, "garbage\r\nContent-Length: 1\r\n\r\nx");
	out(t, 2, 12 * MS, "more");
	assert_int_equal(ngot, 0);
	cw_http_conns_close(t, PID, 2, 13 * MS);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].status, 0);
	assert_int_equal(got[0].bytes_out, 31 + 4);
	assert_int_equal(got[0].first_byte_ns, 11 * MS);
	assert_int_equal(got[0].end_ns, 12 * MS);
	assert_int_equal(got[0].end, CW_HTTP_END_CLOSED);
	assert_int_equal(got[0].body_events, 0);
	cw_http_conns_free(t);
}

/* A write of headers longer than the head capture. */
static void big_head_write(struct cw_http_conns *t, uint64_t ts, const char *end)
{
	static char buf[2048];
	const char *start = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Big: ";
	size_t n = strlen(start), e = strlen(end);

	memcpy(buf, start, n);
	memset(buf + n, 'a', sizeof(buf) - n);
	memcpy(buf + 1500 - e, end, e);
	seg(t, 2, CW_HTTP_OUT, ts, buf, 1500);
}

static void test_headers_longer_than_capture(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	/* The tail ends with the header end: no body in that write. */
	in(t, 2, 10 * MS, "GET /a HTTP/1.1\r\n\r\n");
	big_head_write(t, 11 * MS, "\r\n\r\n");
	out(t, 2, 30 * MS, "3\r\nabc\r\n0\r\n\r\n");
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].first_byte_ns, 11 * MS);
	assert_int_equal(got[0].first_body_ns, 30 * MS);
	assert_int_equal(got[0].streamed, 1);
	assert_int_equal(got[0].end, CW_HTTP_END_COMPLETE);
	/* The tail is body: that write carries the first body bytes. */
	in(t, 2, 40 * MS, "GET /b HTTP/1.1\r\n\r\n");
	big_head_write(t, 41 * MS, "\r\n\r\n3\r\nabc\r\n");
	out(t, 2, 60 * MS, "0\r\n\r\n");
	assert_int_equal(ngot, 2);
	assert_int_equal(got[1].first_body_ns, 41 * MS);
	assert_int_equal(got[1].body_events, 2);
	assert_int_equal(got[1].end, CW_HTTP_END_COMPLETE);
	/* No header end in what was seen: taken to be in the bytes not
	 * copied, and the tail is body. */
	in(t, 2, 70 * MS, "GET /c HTTP/1.1\r\n\r\n");
	big_head_write(t, 71 * MS, "data: {}\n\n");
	assert_int_equal(ngot, 2);
	out(t, 2, 90 * MS, "\r\n0\r\n\r\n");
	assert_int_equal(ngot, 3);
	assert_int_equal(got[2].first_body_ns, 71 * MS);
	assert_int_equal(got[2].body_events, 2);
	assert_int_equal(got[2].end, CW_HTTP_END_COMPLETE);
	cw_http_conns_free(t);
}

static void test_close_without_response(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 2, 10 * MS, "POST /gen HTTP/1.1\r\nContent-Length: 5\r\n\r\n");
	in(t, 2, 12 * MS, "hello");
	cw_http_conns_close(t, PID, 2, 50 * MS);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].status, 0);
	assert_int_equal(got[0].first_byte_ns, 0);
	assert_int_equal(got[0].resp_tid, 0);
	assert_int_equal(got[0].end_ns, 12 * MS);
	assert_int_equal(got[0].bytes_in, 41 + 5);
	assert_int_equal(got[0].end, CW_HTTP_END_CLOSED);
	/* A response running to the close is complete there. */
	in(t, 2, 60 * MS, "GET /old HTTP/1.0\r\n\r\n");
	out(t, 2, 61 * MS, "HTTP/1.0 200 OK\r\n\r\nbody");
	cw_http_conns_close(t, PID, 2, 70 * MS);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[1].end, CW_HTTP_END_COMPLETE);
	assert_int_equal(got[1].end_ns, 61 * MS);
	assert_int_equal(got[1].conn_seq, 2);
	cw_http_conns_free(t);
}

static void test_idle_tick(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 2, 10 * MS, "GET /stream HTTP/1.1\r\n\r\n");
	out(t, 2, 11 * MS, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n");
	cw_http_conns_tick(t, 1000 * MS, 1000 * MS);
	assert_int_equal(ngot, 0);
	cw_http_conns_tick(t, 1011 * MS, 1000 * MS);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].end, CW_HTTP_END_IDLE);
	assert_int_equal(got[0].end_ns, 11 * MS);
	/* Kept one tick with nothing in progress, then forgotten. */
	cw_http_conns_tick(t, 1012 * MS, 1000 * MS);
	in(t, 2, 1100 * MS, "GET /next HTTP/1.1\r\n\r\n");
	cw_http_conns_flush(t, 1200 * MS);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[1].conn_seq, 2);
	cw_http_conns_free(t);
}

static void test_flush(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 2, 10 * MS, "GET /a HTTP/1.1\r\n\r\n");
	in(t, 3, 11 * MS, "GET /b HTTP/1.1\r\n\r\n");
	out(t, 3, 12 * MS, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
	in(t, 4, 13 * MS, "GE"); /* not a request yet */
	cw_http_conns_flush(t, 100 * MS);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[0].end, CW_HTTP_END_FLUSH);
	assert_int_equal(got[1].end, CW_HTTP_END_FLUSH);
	assert_int_equal(got[0].end_ns + got[1].end_ns, 10 * MS + 12 * MS);
	/* Empty: the same connection is a new one. */
	in(t, 2, 200 * MS, "GET /c HTTP/1.1\r\n\r\n");
	cw_http_conns_flush(t, 300 * MS);
	assert_int_equal(ngot, 3);
	assert_int_equal(got[2].conn_seq, 4);
	cw_http_conns_free(t);
}

static void test_table_full(void **state)
{
	struct cw_http_conns *t = table(2);

	(void)state;
	cw_http_conns_open(t, PID, 1, 1);
	cw_http_conns_open(t, PID, 2, 1);
	cw_http_conns_open(t, PID, 3, 1);
	assert_int_equal(stats(t).conns_dropped, 1);
	in(t, 3, 2, "GET /x HTTP/1.1\r\n\r\n");
	in(t, 4, 2, "GET /y HTTP/1.1\r\n\r\n");
	in(t, 4, 3, "more");
	assert_int_equal(stats(t).conns_dropped, 2);
	cw_http_conns_close(t, PID, 1, 4);
	in(t, 3, 5, "GET /z HTTP/1.1\r\n\r\n"); /* still not tracked: its start was not seen */
	cw_http_conns_close(t, PID, 3, 6);
	assert_int_equal(ngot, 0);
	in(t, 5, 7, "GET /w HTTP/1.1\r\n\r\n"); /* room again */
	cw_http_conns_close(t, PID, 5, 8);
	assert_int_equal(ngot, 1);
	assert_string_equal(got[0].path, "/w");
	assert_int_equal(stats(t).segments, 5);
	cw_http_conns_free(t);
}

static void test_close_pid(void **state)
{
	struct cw_http_conns *t = table(8);
	struct cw_http_segment s = { .ts_ns = 5, .tid = 1, .dir = CW_HTTP_IN };
	static const char req[] = "GET /other HTTP/1.1\r\n\r\n";

	(void)state;
	in(t, 1, 1, "GET /1 HTTP/1.1\r\n\r\n");
	in(t, 2, 2, "GET /2 HTTP/1.1\r\n\r\n");
	s.head = (const uint8_t *)req;
	s.head_len = s.len = sizeof(req) - 1;
	cw_http_conns_feed(t, PID + 1, 1, &s);
	cw_http_conns_close_pid(t, PID, 10);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[0].pid, PID);
	assert_int_equal(got[1].pid, PID);
	assert_int_equal(got[0].end, CW_HTTP_END_CLOSED);
	cw_http_conns_flush(t, 20);
	assert_int_equal(ngot, 3);
	assert_int_equal(got[2].pid, PID + 1);
	assert_string_equal(got[2].path, "/other");
	cw_http_conns_free(t);
}

static void test_query_stripped(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 1, 1, "GET /v1/models?api_key=secret HTTP/1.1\r\n\r\n");
	in(t, 2, 1, "GET /doc#frag HTTP/1.1\r\n\r\n");
	in(t, 3, 1, "GET http://h:8000/v1/x?token=1 HTTP/1.1\r\n\r\n");
	in(t, 4, 1, "OPTIONS * HTTP/1.1\r\n\r\n");
	cw_http_conns_flush(t, 2);
	assert_int_equal(ngot, 4);
	assert_string_equal(got[0].path, "/v1/models");
	assert_string_equal(got[1].path, "/doc");
	assert_string_equal(got[2].path, "http://h:8000/v1/x");
	assert_string_equal(got[3].path, "*");
	assert_string_equal(got[3].method, "OPTIONS");
	cw_http_conns_free(t);
}

static void test_path_truncated(void **state)
{
	struct cw_http_conns *t = table(8);
	char req[1200], want[CW_HTTP_PATH_MAX];

	(void)state;
	memcpy(req, "GET /", 5);
	memset(req + 5, 'p', 299);
	memcpy(req + 304, " HTTP/1.1\r\n\r\n", 14);
	in(t, 1, 1, req);
	/* A line longer than the capture: a valid start is a request. */
	memcpy(req, "GET /", 5);
	memset(req + 5, 'q', 1000);
	memcpy(req + 1005, " HTTP/1.1\r\n\r\n", 14);
	in(t, 2, 1, req);
	cw_http_conns_flush(t, 2);
	assert_int_equal(ngot, 2);
	want[0] = '/';
	memset(want + 1, 'p', CW_HTTP_PATH_MAX - 2);
	want[CW_HTTP_PATH_MAX - 1] = '\0';
	assert_string_equal(got[0].path, want);
	assert_int_equal(strlen(got[1].path), CW_HTTP_PATH_MAX - 1);
	assert_int_equal(got[1].bytes_in, 1018);
	cw_http_conns_free(t);
}

static void test_non_printable_path(void **state)
{
	struct cw_http_conns *t = table(8);
	static const char req[] = "GET /a\0b HTTP/1.1\r\n\r\n";

	(void)state;
	in(t, 1, 1,
	   "GET /a\x01"
	   "b HTTP/1.1\r\n\r\n");
	seg(t, 2, CW_HTTP_IN, 1, req, sizeof(req) - 1);
	in(t, 3, 1, "get / HTTP/1.1\r\n\r\n");
	in(t, 4, 1, "GETTINGLONGERTHAN / HTTP/1.1\r\n\r\n");
	in(t, 5, 1, "GET / HTTP/1.1\r\n\r\n");
	cw_http_conns_flush(t, 2);
	assert_int_equal(stats(t).not_http, 4);
	assert_int_equal(ngot, 1);
	assert_string_equal(got[0].path, "/");
	cw_http_conns_free(t);
}

static void test_out_of_order_and_pipelined(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 1, 10, "GET /p1 HTTP/1.1\r\n\r\nGET /p2 HTTP/1.1\r\n\r\n");
	in(t, 1, 5, "GET /old HTTP/1.1\r\n\r\n");
	assert_int_equal(stats(t).out_of_order, 1);
	out(t, 1, 11, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nAHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB");
	assert_int_equal(ngot, 1);
	assert_string_equal(got[0].path, "/p1");
	assert_int_equal(got[0].bytes_in, 40);
	assert_int_equal(got[0].end, CW_HTTP_END_COMPLETE);
	/* A new request while a response runs ends it (END_NEXT). */
	in(t, 1, 20, "GET /q HTTP/1.1\r\n\r\n");
	out(t, 1, 21, "HTTP/1.1 200 OK\r\n");
	out(t, 1, 22, "Content-Length: 100\r\n\r\nxx");
	in(t, 1, 23, "GET /r HTTP/1.1\r\n\r\n");
	assert_int_equal(ngot, 2);
	assert_int_equal(got[1].end, CW_HTTP_END_NEXT);
	assert_int_equal(got[1].end_ns, 22);
	assert_int_equal(got[1].first_body_ns, 22);
	assert_int_equal(got[1].status, 200);
	cw_http_conns_free(t);
}

static void test_upgrade(void **state)
{
	struct cw_http_conns *t = table(8);

	(void)state;
	in(t, 1, 10, "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n");
	out(t, 1, 11, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].status, 101);
	in(t, 1, 12, "GET /not-a-request HTTP/1.1\r\n\r\n"); /* a frame's bytes */
	cw_http_conns_close(t, PID, 1, 13);
	assert_int_equal(ngot, 1);
	cw_http_conns_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keepalive_content_length),
		cmocka_unit_test(test_sse_chunked_ttft_itl),
		cmocka_unit_test(test_chunk_writes_merged),
		cmocka_unit_test(test_100_continue),
		cmocka_unit_test(test_head_and_204),
		cmocka_unit_test(test_slowloris_one_byte_reads),
		cmocka_unit_test(test_tls_client_hello),
		cmocka_unit_test(test_http2_preface),
		cmocka_unit_test(test_response_without_status_line),
		cmocka_unit_test(test_headers_longer_than_capture),
		cmocka_unit_test(test_close_without_response),
		cmocka_unit_test(test_idle_tick),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_close_pid),
		cmocka_unit_test(test_query_stripped),
		cmocka_unit_test(test_path_truncated),
		cmocka_unit_test(test_non_printable_path),
		cmocka_unit_test(test_out_of_order_and_pipelined),
		cmocka_unit_test(test_upgrade),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
