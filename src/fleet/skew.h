/* Clock-skew estimation between this host and an agent, NTP style.
 *
 * Each sample is one GET /api/v1/time on a warm connection: the client
 * reads its realtime clock before sending (t0) and after the answer (t1);
 * the server answers its realtime clock (ts). Assuming the server read its
 * clock halfway through the round trip,
 *     offset = ts - (t0 + t1) / 2,   rtt = t1 - t0,
 * and the error of one sample is at most rtt / 2. The estimate is the
 * median offset of the half of the samples with the shortest round trips
 * (robust to delayed answers), with the median RTT reported alongside. A positive offset means the agent's clock is
 * ahead: agent_time - offset = local time. */
#ifndef CW_FLEET_SKEW_H
#define CW_FLEET_SKEW_H

#include <stdint.h>

#define CW_SKEW_MIN_SAMPLES 3
#define CW_SKEW_DEFAULT_SAMPLES 5
#define CW_SKEW_DEFAULT_WARN_NS (50ULL * 1000000ULL)

struct cw_skew_sample {
	uint64_t t0_ns, t1_ns; /* client realtime before send, after answer */
	uint64_t server_ns;    /* the agent's realtime in the answer */
};

struct cw_skew {
	int valid;          /* 1 when at least CW_SKEW_MIN_SAMPLES samples were usable */
	int samples;        /* usable samples */
	int64_t offset_ns;  /* median offset of the faster half of the samples */
	uint64_t rtt_ns;    /* median round trip */
	uint64_t spread_ns; /* max - min of the per-sample offsets */
};

/* Computes the estimate from n samples (those with t1 < t0 are ignored).
 * Returns 0 when valid, -EAGAIN when fewer than CW_SKEW_MIN_SAMPLES were
 * usable (out still filled with what there was). */
int cw_skew_compute(const struct cw_skew_sample *s, int n, struct cw_skew *out);

/* Maps an agent's wall-clock time onto this host's clock. */
static inline uint64_t cw_skew_to_local(const struct cw_skew *k, uint64_t agent_ns)
{
	return k && k->valid ? (uint64_t)((int64_t)agent_ns - k->offset_ns) : agent_ns;
}

#endif
