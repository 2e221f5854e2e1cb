#include "util/hist.h"

#include <errno.h>
#include <string.h>

void cw_hist_reset(struct cw_hist *h)
{
	memset(h, 0, sizeof(*h));
}

unsigned cw_hist_bucket(uint64_t ns)
{
	unsigned msb, sub;

	if (ns < CW_HIST_SUB)
		return (unsigned)ns;
	msb = 63u - (unsigned)__builtin_clzll(ns);
	sub = (unsigned)(ns >> (msb - CW_HIST_SUB_BITS)) & (CW_HIST_SUB - 1);
	return (msb - CW_HIST_SUB_BITS + 1) * CW_HIST_SUB + sub;
}

uint64_t cw_hist_bucket_low(unsigned b)
{
	unsigned octave = b / CW_HIST_SUB, sub = b % CW_HIST_SUB;

	if (octave == 0)
		return sub;
	return (uint64_t)(CW_HIST_SUB + sub) << (octave - 1);
}

void cw_hist_add(struct cw_hist *h, uint64_t ns)
{
	unsigned b = cw_hist_bucket(ns);

	if (b >= CW_HIST_BUCKETS)
		b = CW_HIST_BUCKETS - 1;
	if (!h->count || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->count++;
	h->sum_ns += ns;
	h->buckets[b]++;
}

void cw_hist_merge(struct cw_hist *dst, const struct cw_hist *src)
{
	unsigned i;

	if (!src->count)
		return;
	if (!dst->count || src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	for (i = 0; i < CW_HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

uint64_t cw_hist_quantile(const struct cw_hist *h, double q)
{
	uint64_t rank, seen = 0, lo, hi, mid;
	unsigned b;

	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min_ns;
	if (q >= 1)
		return h->max_ns;
	/* Nearest-rank: the smallest value with at least q*count at or below. */
	rank = (uint64_t)(q * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	for (b = 0; b < CW_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank)
			break;
	}
	if (b >= CW_HIST_BUCKETS)
		return h->max_ns;
	lo = cw_hist_bucket_low(b);
	hi = b + 1 < CW_HIST_BUCKETS ? cw_hist_bucket_low(b + 1) : lo;
	mid = lo + (hi - lo) / 2;
	if (mid < h->min_ns)
		mid = h->min_ns;
	if (mid > h->max_ns)
		mid = h->max_ns;
	return mid;
}

static int put_varint(uint8_t *out, size_t cap, size_t *pos, uint64_t v)
{
	do {
		if (*pos >= cap)
			return -ENOSPC;
		out[(*pos)++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return 0;
}

static int get_varint(const uint8_t *in, size_t len, size_t *pos, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*pos < len && shift < 64) {
		uint8_t b = in[(*pos)++];

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	return -EINVAL;
}

int cw_hist_encode(const struct cw_hist *h, uint8_t *out, size_t cap)
{
	size_t pos = 0;
	unsigned b, prev = 0;

	for (b = 0; b < CW_HIST_BUCKETS; b++) {
		if (!h->buckets[b])
			continue;
		if (put_varint(out, cap, &pos, b - prev) ||
		    put_varint(out, cap, &pos, h->buckets[b]))
			return -ENOSPC;
		prev = b;
	}
	return (int)pos;
}

int cw_hist_decode_merge(struct cw_hist *h, const uint8_t *in, size_t len,
			 uint64_t count, uint64_t sum_ns, uint64_t max_ns)
{
	struct cw_hist part;
	size_t pos = 0;
	uint64_t delta, n, total = 0;
	unsigned b = 0;
	int first = 1;

	cw_hist_reset(&part);
	while (pos < len) {
		if (get_varint(in, len, &pos, &delta) || get_varint(in, len, &pos, &n))
			return -EINVAL;
		if ((!first && delta == 0) || delta >= CW_HIST_BUCKETS ||
		    b + delta >= CW_HIST_BUCKETS || n > UINT32_MAX)
			return -EINVAL;
		b += (unsigned)delta;
		first = 0;
		part.buckets[b] = (uint32_t)n;
		total += n;
		if (!part.count || cw_hist_bucket_low(b) < part.min_ns)
			part.min_ns = cw_hist_bucket_low(b);
		part.count = 1; /* marks min as set */
	}
	if (total != count)
		return -EINVAL;
	part.count = count;
	part.sum_ns = sum_ns;
	part.max_ns = max_ns;
	cw_hist_merge(h, &part);
	return 0;
}
