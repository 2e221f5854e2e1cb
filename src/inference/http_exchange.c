/* One connection's HTTP/1.1 exchanges (http_conn_int.h): request lines
 * read, possibly over several reads; response heads written, possibly over
 * several writes, with the framing of their bodies; body writes as events.
 * A connection keeps at most CW_HTTP_HEAD_CAP bytes of a request line still
 * being read, a CW_HTTP_LINE_KEPT-byte response header line and the last
 * CW_HTTP_WIN body bytes: memory never depends on what the wire carries.
 *
 * What is approximated, on purpose:
 * - Pipelined requests (several in one read, or read before the first
 *   response) are counted as the first one's bytes: only the first line
 *   of a read is looked at while its request is unanswered.
 * - A chunked body ends at a write whose bytes end with "0\r\n\r\n" (after
 *   a CRLF, or as the whole body); trailers and chunk extensions on the
 *   last chunk are not recognised (the request then ends at the next one,
 *   the close, the idle tick or the flush).
 * - Response headers longer than a write's captured head: the header end
 *   is assumed in the bytes not seen unless the captured tail ends with
 *   "\r\n\r\n"; then Content-Length cannot be counted and only the other
 *   endings apply.
 * - A response that does not start with "HTTP/1.x NNN" keeps status 0 and
 *   has no body events (where its body starts is unknown); its bytes count.
 * - 101 Switching Protocols (and a 2xx to CONNECT) ends the request at its
 *   header end and the connection is no longer parsed: it is not HTTP now.
 * - A request line longer than what can be seen (a read longer than its
 *   captured head, or CW_HTTP_HEAD_CAP bytes kept over several reads) is a
 *   request when what was seen is a valid start; its path is truncated.
 * - A read with nothing captured (head_len 0) starts nothing.
 *
 * The emit callback must not call back into the table. */
#include "inference/http_conn_int.h"

#include <string.h>

#include "inference/http_parse.h"

/* The request in progress on c ends. */
static void end_request(struct cw_http_conns *t, struct conn *c, enum cw_http_end end, uint64_t end_ns)
{
	struct cw_http_request *r = &c->req;

	if (!c->active)
		return;
	r->end = end;
	r->end_ns = end_ns;
	r->pid = c->pid;
	r->fd = c->fd;
	t->st.requests++;
	if (t->emit)
		t->emit(t->ctx, r);
	c->active = 0;
	c->resp_begun = 0;
	/* Bytes held as a possible request line that were counted in this
	 * request were its body: what follows them is not their sequel. */
	if (c->pend_lent)
		c->pend_on = 0;
	c->pend_lent = 0;
}

static uint64_t last_moved(const struct conn *c)
{
	return c->resp_begun ? c->last_out : c->last_in;
}

/* Closed with the request unfinished: complete when its body ran to the
 * close (a response with neither Content-Length nor chunked). */
void cw_http_conn_end_at_close(struct cw_http_conns *t, struct conn *c)
{
	int to_close = c->resp_begun && c->phase == PH_BODY && c->req.status && !c->chunked && !c->have_clen;

	end_request(t, c, to_close ? CW_HTTP_END_COMPLETE : CW_HTTP_END_CLOSED, last_moved(c));
}

static void begin_request(struct conn *c, uint64_t start, uint32_t tid, const char *method, const char *path,
			  uint64_t bytes, uint64_t ts)
{
	struct cw_http_request *r = &c->req;
	uint64_t seq = r->conn_seq;

	memset(r, 0, sizeof(*r));
	r->conn_seq = seq;
	r->start_ns = start;
	r->tid = tid;
	memcpy(r->method, method, CW_HTTP_METHOD_MAX);
	memcpy(r->path, path, CW_HTTP_PATH_MAX);
	r->bytes_in = bytes;
	c->last_in = ts;
	c->last_out = 0;
	c->active = 1;
	c->seen_req = 1;
	c->resp_begun = 0;
}

void cw_http_conn_end(struct cw_http_conns *t, struct conn *c, enum cw_http_end end)
{
	end_request(t, c, end, last_moved(c));
}

/* ---- requests (reads) ---- */

void cw_http_conn_in(struct cw_http_conns *t, struct conn *c, const struct view *v)
{
	const struct cw_http_segment *s = v->s;
	char method[CW_HTTP_METHOD_MAX], path[CW_HTTP_PATH_MAX];
	const uint8_t *buf;
	size_t n;
	int rc, cut, start_of_pend = c->pend_on;
	uint64_t bytes, lent;

	memset(method, 0, sizeof(method));
	memset(path, 0, sizeof(path));

	if (!c->pend_on && c->active && !c->resp_begun) {
		c->req.bytes_in += s->len; /* the same request's headers or body */
		c->last_in = s->ts_ns;
		return;
	}
	if (c->pend_on) {
		size_t room = sizeof(c->pend) - c->pend_len, take = v->hl < room ? v->hl : room;

		if (take)
			memcpy(c->pend + c->pend_len, v->head, take);
		c->pend_len = (uint16_t)(c->pend_len + take);
		c->pend_bytes += s->len;
		buf = c->pend;
		n = c->pend_len;
		/* No more contiguous bytes to come into pend. */
		cut = s->len > take || c->pend_len == sizeof(c->pend);
	} else {
		if (!v->hl) { /* nothing captured: nothing to decide on */
			if (c->active) {
				c->req.bytes_in += s->len;
				c->last_in = s->ts_ns;
			}
			return;
		}
		buf = v->head;
		n = v->hl;
		cut = s->len > v->hl || n == sizeof(c->pend);
	}
	rc = cw_http_parse_request_line(buf, n, method, path);
	if (rc == CW_REQLINE_MORE && !cut) {
		if (!c->pend_on) { /* slowloris, or a line split over reads */
			memcpy(c->pend, v->head, v->hl);
			c->pend_len = (uint16_t)v->hl;
			c->pend_on = 1;
			c->pend_start = s->ts_ns;
			c->pend_tid = s->tid;
			c->pend_bytes = s->len;
			c->pend_lent = 0;
		}
		if (c->active) {
			/* Likely the body of the request answered (after a 100
			 * Continue): counted there until it is a request line. */
			c->req.bytes_in += s->len;
			c->pend_lent += s->len;
			c->last_in = s->ts_ns;
		}
		return;
	}
	if (rc == CW_REQLINE_MORE)
		rc = CW_REQLINE_OK; /* a valid start of a line longer than can be seen */
	bytes = c->pend_on ? c->pend_bytes : s->len;
	lent = c->pend_on ? c->pend_lent : 0;
	c->pend_on = 0;
	c->pend_lent = 0;
	if (rc == CW_REQLINE_OK) {
		uint64_t start = start_of_pend ? c->pend_start : s->ts_ns;
		uint32_t tid = start_of_pend ? c->pend_tid : s->tid;

		if (c->active) {
			c->req.bytes_in -= lent; /* they were this line's */
			end_request(t, c, CW_HTTP_END_NEXT, last_moved(c));
		}
		begin_request(c, start, tid, method, path, bytes, s->ts_ns);
		return;
	}
	if (c->active) { /* a request body read after its response began */
		c->req.bytes_in += bytes - lent;
		c->last_in = s->ts_ns;
	} else if (!c->seen_req) {
		c->not_http = 1;
		t->st.not_http++;
		if (cw_http_looks_tls(buf, n))
			t->st.tls++;
	}
	/* Else the rest of a request whose response already ended: dropped. */
}

/* ---- responses (writes) ---- */

static void complete(struct cw_http_conns *t, struct conn *c, uint64_t ts)
{
	end_request(t, c, CW_HTTP_END_COMPLETE, ts);
}

static void line_reset(struct conn *c)
{
	c->line_len = 0;
	c->line_over = 0;
	c->line_lost = 0;
}

/* A response head ended (an interim one, or the final one). Returns 1 when
 * the request completed. */
static int header_end(struct cw_http_conns *t, struct conn *c, uint64_t ts, int pos_known)
{
	int st = c->cur_status;

	line_reset(c);
	if (st >= 100 && st < 200 && st != 101) { /* 100 Continue, 103 Early Hints */
		c->phase = PH_STATUS;
		c->have_clen = c->chunked = c->sse = 0;
		return 0;
	}
	c->req.status = st;
	c->req.streamed = c->chunked || c->sse;
	c->phase = PH_BODY;
	c->body_pos_known = (uint8_t)pos_known;
	c->body_bytes = 0;
	c->win_len = 0;
	if (st == 101 || (st / 100 == 2 && !strcmp(c->req.method, "CONNECT")))
		c->not_http = 1; /* another protocol from here on */
	if (st / 100 == 1 || st == 204 || st == 304 || !strcmp(c->req.method, "HEAD") || c->not_http ||
	    (!c->chunked && c->have_clen && c->clen == 0)) {
		complete(t, c, ts);
		return 1;
	}
	return 0;
}

/* One response head byte. Returns 1 at the header end (an empty line). */
static int head_byte(struct conn *c, uint8_t b)
{
	size_t n;
	uint64_t clen = 0;
	unsigned h;

	if (b != '\n') {
		if (c->line_len < sizeof(c->line))
			c->line[c->line_len++] = (char)b;
		else
			c->line_over = 1;
		return 0;
	}
	n = c->line_len;
	if (n && !c->line_over && c->line[n - 1] == '\r')
		n--;
	if (c->phase == PH_STATUS) {
		int st = c->line_lost ? -1 : cw_http_parse_status(c->line, n);

		line_reset(c);
		if (st < 0) {
			c->phase = PH_GARBAGE;
		} else {
			c->cur_status = st;
			c->phase = PH_HEADERS;
		}
		return 0;
	}
	if (c->line_lost) {
		line_reset(c);
		return 0;
	}
	/* The header end is an empty line, CRLF only: "\n\n" is common in
	 * event-stream bodies, which a tail after bytes not seen can hold. */
	if (c->line_len == 1 && c->line[0] == '\r')
		return 1;
	h = cw_http_header_line(c->line, n, c->line_over, &clen);
	if ((h & CW_HDR_CLEN) && !c->have_clen) {
		c->have_clen = 1;
		c->clen = clen;
	}
	if (h & CW_HDR_CHUNKED)
		c->chunked = 1;
	if (h & CW_HDR_SSE)
		c->sse = 1;
	line_reset(c);
	return 0;
}

static void win_push(struct conn *c, const uint8_t *p, size_t n)
{
	if (!n)
		return; /* p may be NULL */
	if (n >= CW_HTTP_WIN) {
		memcpy(c->win, p + n - CW_HTTP_WIN, CW_HTTP_WIN);
		c->win_len = CW_HTTP_WIN;
		return;
	}
	if (c->win_len + n > CW_HTTP_WIN) {
		size_t drop = c->win_len + n - CW_HTTP_WIN;

		memmove(c->win, c->win + drop, c->win_len - drop);
		c->win_len = (uint8_t)(c->win_len - drop);
	}
	memcpy(c->win + c->win_len, p, n);
	c->win_len = (uint8_t)(c->win_len + n);
}

/* The body seen so far ends with the last chunk, "0\r\n\r\n", after the
 * previous chunk's CRLF (or leading zeros), or as the whole body. */
static int last_chunk(const struct conn *c)
{
	uint8_t prev;

	if (c->win_len < 5 || memcmp(c->win + c->win_len - 5, "0\r\n\r\n", 5))
		return 0;
	if (c->win_len == 5)
		return 1; /* the whole body, or what follows bytes not seen */
	prev = c->win[c->win_len - 6];
	return prev == '\n' || prev == '0';
}

/* The status line cut by bytes not seen: what was kept decides. */
static void head_gap(struct conn *c)
{
	if (c->phase == PH_STATUS) {
		int st = c->line_lost ? -1 : cw_http_parse_status(c->line, c->line_len);

		/* A final status; an interim one's end, and so the final
		 * status after it, are not seen. */
		c->phase = st >= 200 || st == 101 ? PH_HEADERS : PH_GARBAGE;
		c->cur_status = st;
	}
	c->line_len = 0;
	c->line_over = 0;
	c->line_lost = 1;
}

void cw_http_conn_out(struct cw_http_conns *t, struct conn *c, const struct view *v)
{
	const struct cw_http_segment *s = v->s;
	struct cw_http_request *r = &c->req;
	const uint8_t *piece[2] = { v->head, v->tail };
	size_t plen[2] = { v->hl, v->tl };
	uint64_t poff[2] = { 0, s->len - v->tl };
	int carries = 0; /* this write has body bytes */
	int assume = 0;	 /* the head went on into bytes not seen and has not ended since */
	uint64_t body_n = 0;
	size_t k, i;

	if (!c->active)
		return; /* nothing asked: a 408 on an idle connection, or bytes past a response's end */
	r->bytes_out += s->len;
	c->last_out = s->ts_ns;
	if (!c->resp_begun) {
		c->resp_begun = 1;
		r->first_byte_ns = s->ts_ns;
		r->resp_tid = s->tid;
		c->phase = PH_STATUS;
		c->cur_status = 0;
		c->have_clen = c->chunked = c->sse = 0;
		line_reset(c);
	}
	if (c->phase == PH_GARBAGE)
		return;
	if (c->phase == PH_BODY) {
		carries = 1;
		body_n = s->len;
	}
	for (k = 0; k < 2; k++) {
		if (k == 1 && v->gap) {
			if (c->phase == PH_BODY)
				c->win_len = 0;
			else if (c->phase != PH_GARBAGE)
				head_gap(c);
			assume = c->phase == PH_HEADERS;
		}
		for (i = 0; i < plen[k]; i++) {
			if (c->phase == PH_BODY) {
				win_push(c, piece[k] + i, plen[k] - i);
				break;
			}
			if (c->phase != PH_STATUS && c->phase != PH_HEADERS)
				break;
			if (head_byte(c, piece[k][i])) {
				uint64_t off = poff[k] + i + 1; /* where the body starts */

				assume = 0;
				if (header_end(t, c, s->ts_ns, 1))
					return;
				if (c->phase == PH_BODY && off < s->len) {
					carries = 1;
					body_n = s->len - off;
				}
			}
		}
	}
	/* Still in the head with bytes not seen: its end is taken to be in
	 * them (headers longer than the capture) and the rest is body. */
	if (assume && c->phase == PH_HEADERS) {
		if (header_end(t, c, s->ts_ns, 0))
			return;
		if (c->phase == PH_BODY) {
			carries = 1;
			win_push(c, v->tail, v->tl);
		}
	}
	if (!carries || c->phase != PH_BODY)
		return;
	/* A body write: a new event unless it follows the previous one closely. */
	if (!r->body_events) {
		r->first_body_ns = s->ts_ns;
		r->body_events = 1;
		c->last_event = s->ts_ns;
	} else if (s->ts_ns - c->last_body_write >= CW_HTTP_WRITE_MERGE_NS) {
		uint64_t gap = s->ts_ns - c->last_event;

		r->body_events++;
		r->itl_sum_ns += gap;
		if (gap > r->itl_max_ns)
			r->itl_max_ns = gap;
		c->last_event = s->ts_ns;
	}
	c->last_body_write = s->ts_ns;
	c->body_bytes += body_n;
	if (c->chunked ? last_chunk(c) : (c->have_clen && c->body_pos_known && c->body_bytes >= c->clen))
		complete(t, c, s->ts_ns);
}
