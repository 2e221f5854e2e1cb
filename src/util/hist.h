/* Log-linear latency histogram: 8 buckets per power of two, so any
 * percentile read back is within ~4.4 % of the true value. Used for the
 * per-second aggregates and for every percentile causeway prints. */
#ifndef CW_UTIL_HIST_H
#define CW_UTIL_HIST_H

#include <stddef.h>
#include <stdint.h>

#define CW_HIST_SUB_BITS 3
#define CW_HIST_SUB (1u << CW_HIST_SUB_BITS)
#define CW_HIST_BUCKETS (64 * CW_HIST_SUB)

struct cw_hist {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	uint32_t buckets[CW_HIST_BUCKETS];
};

void cw_hist_reset(struct cw_hist *h);
void cw_hist_add(struct cw_hist *h, uint64_t ns);
void cw_hist_merge(struct cw_hist *dst, const struct cw_hist *src);
/* q in [0,1]. Returns the bucket's representative value clamped to
 * [min, max]; 0 when empty. */
uint64_t cw_hist_quantile(const struct cw_hist *h, double q);
unsigned cw_hist_bucket(uint64_t ns);
uint64_t cw_hist_bucket_low(unsigned b);

/* Compact encoding for the store: (varint bucket delta, varint count)
 * pairs of the non-empty buckets. encode returns bytes written or -ENOSPC;
 * decode merges into h and returns 0 or -EINVAL on malformed input. */
int cw_hist_encode(const struct cw_hist *h, uint8_t *out, size_t cap);
int cw_hist_decode_merge(struct cw_hist *h, const uint8_t *in, size_t len,
			 uint64_t count, uint64_t sum_ns, uint64_t max_ns);
#define CW_HIST_ENCODED_MAX (CW_HIST_BUCKETS * 10)

#endif
