/* Connections and their HTTP/1.1 requests (http_conn.h).
 *
 * A fixed table: max_conns connection records allocated once, found by an
 * open-addressing index (linear probing, deletion by backward shift, so no
 * tombstones), free records on a stack; a small direct-mapped cache of the
 * keys not tracked (the table was full), so each is counted once and stays
 * untracked until it closes. What happens on each connection is
 * http_exchange.c's.
 *
 * The emit callback must not call back into the table. */
#include "inference/http_conn_int.h"

#include <stdlib.h>
#include <string.h>

static uint64_t key_of(uint32_t pid, int32_t fd)
{
	return (uint64_t)pid << 32 | (uint32_t)fd;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

struct cw_http_conns *cw_http_conns_new(size_t max_conns, void (*emit)(void *ctx, const struct cw_http_request *r),
					void *ctx)
{
	struct cw_http_conns *t;
	size_t n = 2, i;

	if (max_conns > (1u << 24))
		return NULL;
	while (n < 2 * max_conns)
		n *= 2;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->max = max_conns;
	t->mask = n - 1;
	t->slots = calloc(n, sizeof(*t->slots));
	t->conns = calloc(max_conns ? max_conns : 1, sizeof(*t->conns));
	t->free_idx = calloc(max_conns ? max_conns : 1, sizeof(*t->free_idx));
	if (!t->slots || !t->conns || !t->free_idx) {
		cw_http_conns_free(t);
		return NULL;
	}
	for (i = 0; i < max_conns; i++)
		t->free_idx[i] = (uint32_t)(max_conns - 1 - i);
	t->nfree = max_conns;
	t->emit = emit;
	t->ctx = ctx;
	return t;
}

void cw_http_conns_free(struct cw_http_conns *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t->conns);
	free(t->free_idx);
	free(t);
}

static size_t home_of(const struct cw_http_conns *t, uint64_t key)
{
	return (size_t)mix(key) & t->mask;
}

/* The slot holding (pid, fd), or SIZE_MAX. */
static size_t find_slot(const struct cw_http_conns *t, uint32_t pid, int32_t fd)
{
	size_t i = home_of(t, key_of(pid, fd));

	while (t->slots[i]) {
		const struct conn *c = &t->conns[t->slots[i] - 1];

		if (c->pid == pid && c->fd == fd)
			return i;
		i = (i + 1) & t->mask;
	}
	return SIZE_MAX;
}

static struct conn *find(struct cw_http_conns *t, uint32_t pid, int32_t fd)
{
	size_t i = find_slot(t, pid, fd);

	return i == SIZE_MAX ? NULL : &t->conns[t->slots[i] - 1];
}

/* Empties slot i, moving later entries of its probe run back. */
static void slot_delete(struct cw_http_conns *t, size_t i)
{
	size_t j = i, k;

	for (;;) {
		j = (j + 1) & t->mask;
		if (!t->slots[j])
			break;
		k = home_of(t, key_of(t->conns[t->slots[j] - 1].pid, t->conns[t->slots[j] - 1].fd));
		/* The entry at j may move to i unless its home lies in (i, j]. */
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = 0;
}

static void forget(struct cw_http_conns *t, struct conn *c)
{
	size_t i = find_slot(t, c->pid, c->fd);

	if (i != SIZE_MAX)
		slot_delete(t, i);
	c->used = 0;
	t->free_idx[t->nfree++] = (uint32_t)(c - t->conns);
}

static void conn_reset(struct cw_http_conns *t, struct conn *c, uint32_t pid, int32_t fd, uint64_t ts)
{
	memset(c, 0, sizeof(*c));
	c->used = 1;
	c->pid = pid;
	c->fd = fd;
	c->last_ts = ts;
	c->req.conn_seq = ++t->next_seq;
}

static int dropped_has(const struct cw_http_conns *t, uint64_t key, size_t *at)
{
	*at = (size_t)mix(key) % CW_HTTP_DROPPED_CACHE;
	return (t->dropped_valid >> *at & 1) && t->dropped[*at] == key;
}

/* A new record for (pid, fd), or NULL when the table is full (counted
 * once per connection, as far as the small cache of dropped keys tells). */
static struct conn *insert(struct cw_http_conns *t, uint32_t pid, int32_t fd, uint64_t ts)
{
	uint64_t key = key_of(pid, fd);
	size_t at, i;
	struct conn *c;

	if (!t->nfree) {
		t->st.conns_dropped++;
		dropped_has(t, key, &at);
		t->dropped[at] = key;
		t->dropped_valid |= 1ull << at;
		return NULL;
	}
	c = &t->conns[t->free_idx[--t->nfree]];
	conn_reset(t, c, pid, fd, ts);
	i = home_of(t, key);
	while (t->slots[i])
		i = (i + 1) & t->mask;
	t->slots[i] = (uint32_t)(c - t->conns) + 1;
	return c;
}

void cw_http_conns_open(struct cw_http_conns *t, uint32_t pid, int32_t fd, uint64_t ts_ns)
{
	struct conn *c = find(t, pid, fd);

	if (!c) {
		insert(t, pid, fd, ts_ns);
		return;
	}
	cw_http_conn_end_at_close(t, c);
	conn_reset(t, c, pid, fd, ts_ns);
}

void cw_http_conns_feed(struct cw_http_conns *t, uint32_t pid, int32_t fd, const struct cw_http_segment *s)
{
	struct conn *c;
	struct view v;

	t->st.segments++;
	if (!s || !s->len)
		return;
	c = find(t, pid, fd);
	if (!c) {
		size_t at;

		if (dropped_has(t, key_of(pid, fd), &at))
			return; /* not tracked from its start: stays untracked until closed */
		c = insert(t, pid, fd, s->ts_ns);
		if (!c)
			return;
	}
	if (s->ts_ns < c->last_ts) {
		t->st.out_of_order++;
		return;
	}
	c->last_ts = s->ts_ns;
	if (c->not_http)
		return;
	/* The contract's bounds, enforced: never read past what was captured. */
	v.s = s;
	v.head = s->head;
	v.hl = s->head ? s->head_len : 0;
	if (v.hl > CW_HTTP_HEAD_CAP)
		v.hl = CW_HTTP_HEAD_CAP;
	if (v.hl > s->len)
		v.hl = (size_t)s->len;
	v.tail = s->tail;
	v.tl = s->tail ? s->tail_len : 0;
	if (v.tl > CW_HTTP_TAIL_CAP)
		v.tl = CW_HTTP_TAIL_CAP;
	if (v.tl > s->len - v.hl)
		v.tl = (size_t)(s->len - v.hl);
	v.gap = s->len > v.hl + v.tl;
	if (s->dir == CW_HTTP_IN)
		cw_http_conn_in(t, c, &v);
	else if (s->dir == CW_HTTP_OUT)
		cw_http_conn_out(t, c, &v);
}

static void dropped_clear(struct cw_http_conns *t, uint32_t pid, int32_t fd)
{
	size_t at;

	if (dropped_has(t, key_of(pid, fd), &at))
		t->dropped_valid &= ~(1ull << at);
}

void cw_http_conns_close(struct cw_http_conns *t, uint32_t pid, int32_t fd, uint64_t ts_ns)
{
	struct conn *c = find(t, pid, fd);

	dropped_clear(t, pid, fd);
	if (!c)
		return;
	cw_http_conn_end_at_close(t, c);
	forget(t, c);
}

void cw_http_conns_close_pid(struct cw_http_conns *t, uint32_t pid, uint64_t ts_ns)
{
	size_t i;

	for (i = 0; i < t->max; i++) {
		struct conn *c = &t->conns[i];

		if (c->used && c->pid == pid) {
			cw_http_conn_end_at_close(t, c);
			forget(t, c);
		}
	}
	for (i = 0; i < CW_HTTP_DROPPED_CACHE; i++)
		if ((t->dropped_valid >> i & 1) && (uint32_t)(t->dropped[i] >> 32) == pid)
			t->dropped_valid &= ~(1ull << i);
}

void cw_http_conns_tick(struct cw_http_conns *t, uint64_t now_ns, uint64_t idle_ns)
{
	size_t i;

	for (i = 0; i < t->max; i++) {
		struct conn *c = &t->conns[i];

		if (!c->used || now_ns < c->last_ts || now_ns - c->last_ts < idle_ns)
			continue;
		if (c->active)
			cw_http_conn_end(t, c, CW_HTTP_END_IDLE); /* kept: forgotten at a later tick */
		else
			forget(t, c);
	}
}

void cw_http_conns_flush(struct cw_http_conns *t, uint64_t now_ns)
{
	size_t i;

	for (i = 0; i < t->max; i++) {
		struct conn *c = &t->conns[i];

		if (c->used) {
			cw_http_conn_end(t, c, CW_HTTP_END_FLUSH);
			c->used = 0;
		}
		t->free_idx[i] = (uint32_t)(t->max - 1 - i);
	}
	memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
	t->nfree = t->max;
	t->dropped_valid = 0;
}

void cw_http_conns_stats(const struct cw_http_conns *t, struct cw_http_stats *out)
{
	*out = t->st;
}
