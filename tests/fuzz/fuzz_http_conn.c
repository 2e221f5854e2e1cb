/* Fuzzes the HTTP/1.1 request reader (src/inference/http_conn.c): every
 * byte it reads is a server socket's traffic, so anything can arrive.
 * Input: a sequence of operations on a table of 8 connections (4 pids x 8
 * fds compete for them), each starting with one byte:
 *   low 3 bits 0-4: a segment on key (byte >> 3); then a flags byte (bit 0
 *       direction, bits 1-2 how time moves: +0, +us, +ms, backwards; bits
 *       3-4 what len is: head only, head + tail, head + gap + tail, head +
 *       a gap that the tail may not fit; bits 5-7 tid), 2 bytes of head length (mod 513), the head, 1
 *       byte of tail length (mod 17), the tail, and for a gap 2 bytes of it;
 *       head and tail are exact-size heap copies, so a read past them is
 *       caught;
 *   5: open, 6: close key; 7: the next byte picks tick (idle 1-256 ms),
 *       flush or close_pid.
 * The emit callback checks what every record must be whatever came in. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/http_conn.h"

static uint64_t emitted;

static void check_text(const char *s, size_t cap, int upper_only)
{
	size_t n = strnlen(s, cap);

	if (n >= cap)
		abort();
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x21 || c > 0x7e || (upper_only && (c < 'A' || c > 'Z')))
			abort();
	}
}

static void check(void *ctx, const struct cw_http_request *r)
{
	(void)ctx;
	emitted++;
	check_text(r->method, sizeof(r->method), 1);
	check_text(r->path, sizeof(r->path), 0);
	if (r->pid < 1 || r->pid > 4 || r->fd < 0 || r->fd > 7 || r->conn_seq < 1)
		abort();
	if (r->end_ns < r->start_ns || (unsigned)r->end > CW_HTTP_END_FLUSH)
		abort();
	if (r->first_byte_ns && (r->first_byte_ns < r->start_ns || r->first_byte_ns > r->end_ns))
		abort();
	if (r->first_body_ns &&
	    (!r->first_byte_ns || r->first_body_ns < r->first_byte_ns || r->first_body_ns > r->end_ns))
		abort();
	if (!r->first_byte_ns && (r->bytes_out || r->status || r->first_body_ns || r->body_events))
		abort();
	if ((r->body_events == 0) != (r->first_body_ns == 0))
		abort();
	if (r->body_events <= 1 && (r->itl_sum_ns || r->itl_max_ns))
		abort();
	if (r->itl_max_ns > r->itl_sum_ns || r->itl_sum_ns > r->end_ns - r->first_body_ns)
		abort();
	if (r->status && (r->status < 100 || r->status > 999))
		abort();
	if (r->streamed != 0 && r->streamed != 1)
		abort();
	if (r->bytes_in == 0)
		abort(); /* a request is bytes read */
}

struct input {
	const uint8_t *p;
	size_t n;
};

static int take(struct input *in, uint8_t *b)
{
	if (!in->n)
		return 0;
	*b = *in->p++;
	in->n--;
	return 1;
}

static size_t take16(struct input *in)
{
	uint8_t a = 0, b = 0;

	take(in, &a);
	take(in, &b);
	return (size_t)a << 8 | b;
}

/* The next up to want bytes of the input as an exact-size heap copy. */
static uint8_t *take_copy(struct input *in, size_t want, size_t *got)
{
	size_t n = want < in->n ? want : in->n;
	uint8_t *p = malloc(n ? n : 1);

	if (!p)
		abort();
	memcpy(p, in->p, n);
	in->p += n;
	in->n -= n;
	*got = n;
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct cw_http_conns *t = cw_http_conns_new(8, check, NULL);
	struct cw_http_stats st;
	uint64_t now = 1000000000ull;
	uint8_t op, b;

	if (!t)
		return 0;
	emitted = 0;
	while (take(&in, &op)) {
		uint32_t pid = 1 + ((op >> 3) >> 3);
		int32_t fd = (op >> 3) & 7;

		if ((op & 7) <= 4) {
			struct cw_http_segment s = { 0 };
			uint8_t flags = 0, *head, *tail;
			size_t hl, tl;

			take(&in, &flags);
			switch ((flags >> 1) & 3) {
			case 1:
				b = 0;
				take(&in, &b);
				now += (uint64_t)b * 1000;
				break;
			case 2:
				b = 0;
				take(&in, &b);
				now += (uint64_t)b * 1000000;
				break;
			case 3:
				b = 0;
				take(&in, &b);
				s.ts_ns = now - (uint64_t)b * 1000000; /* older than the last */
				break;
			}
			if (((flags >> 1) & 3) != 3)
				s.ts_ns = now;
			s.dir = flags & 1 ? CW_HTTP_OUT : CW_HTTP_IN;
			s.tid = flags >> 5;
			head = take_copy(&in, take16(&in) % (CW_HTTP_HEAD_CAP + 1), &hl);
			b = 0;
			take(&in, &b);
			tail = take_copy(&in, b % (CW_HTTP_TAIL_CAP + 1), &tl);
			s.head = head;
			s.head_len = hl;
			switch ((flags >> 3) & 3) {
			case 0:
				s.len = hl;
				s.tail_len = 0;
				break;
			case 1:
				s.len = hl + tl;
				break;
			case 2:
				s.len = hl + tl + 1 + take16(&in) * 4099ull;
				break;
			case 3:
				s.len = hl + 1 + take16(&in);
				break;
			}
			if ((flags >> 3) & 3) { /* mode 3: a tail that may not fit len */
				s.tail = tail;
				s.tail_len = tl;
			}
			if (!s.len)
				s.len = 1; /* the contract's len > 0; head_len 0 stays possible */
			cw_http_conns_feed(t, pid, fd, &s);
			free(head);
			free(tail);
		} else if ((op & 7) == 5) {
			cw_http_conns_open(t, pid, fd, now);
		} else if ((op & 7) == 6) {
			cw_http_conns_close(t, pid, fd, now);
		} else {
			b = 0;
			take(&in, &b);
			if (b % 3 == 0)
				cw_http_conns_tick(t, now, ((uint64_t)(b >> 2) + 1) * 1000000);
			else if (b % 3 == 1)
				cw_http_conns_flush(t, now);
			else
				cw_http_conns_close_pid(t, pid, now);
		}
	}
	cw_http_conns_flush(t, now);
	cw_http_conns_stats(t, &st);
	if (st.requests != emitted || st.tls > st.not_http || st.out_of_order > st.segments)
		abort();
	cw_http_conns_free(t);
	return 0;
}
