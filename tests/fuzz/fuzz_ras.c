/* Fuzzes the NCCL RAS report parser (gpu/nccl_ras.h): whatever listens on
 * the RAS port answers what it likes. Input: the STATUS reply (an exact-
 * size heap copy, so a read past the end is caught). The parsed status
 * must stay within its bounds, and its JSON (what trace stores and explain
 * re-reads) must be a JSON object that jansson can write. The streaming
 * parser (gpu/ras_stream.h) is fed the same reply in pieces (their size
 * from the first byte) and must read it exactly as whole; cut short with
 * the cap's truncation, it must still be within bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/nccl_ras.h"
#include "gpu/ras_stream.h"

static void check_bounds(const struct cw_ras_status *st)
{
	if (st->ncomms < 0)
		abort();
	for (int i = 0; i < st->ncomms && i < CW_RAS_MAX_COMMS; i++) {
		const struct cw_ras_comm *c = &st->comms[i];

		if (c->nbehind < 0 || c->nbehind > CW_RAS_MAX_LISTED || c->nmissing_listed < 0 ||
		    c->nmissing_listed > CW_RAS_MAX_LISTED || c->missing_count < c->nmissing_listed ||
		    c->min_collectives > c->max_collectives || memchr(c->hash, 0, sizeof(c->hash)) == NULL)
			abort();
		for (int k = 0; k < c->nbehind; k++)
			if (c->behind[k].collectives >= c->max_collectives)
				abort();
	}
}

/* The reply fed in pieces of step bytes, whole (truncated 0) or cut at
 * half (truncated 1). */
static void streamed(const char *buf, size_t size, size_t step, const struct cw_ras_status *whole, int whole_ret)
{
	static struct cw_ras_stream s;
	static struct cw_ras_status st;
	size_t end = size / 2;
	int ret;

	cw_ras_stream_init(&s, &st);
	for (size_t off = 0; off < size; off += step)
		(void)cw_ras_stream_feed(&s, buf + off, off + step > size ? size - off : step);
	ret = cw_ras_stream_end(&s, 0);
	if (ret != whole_ret || memcmp(&st, whole, sizeof(st)))
		abort();
	cw_ras_stream_init(&s, &st);
	for (size_t off = 0; off < end; off += step)
		(void)cw_ras_stream_feed(&s, buf + off, off + step > end ? end - off : step);
	if (cw_ras_stream_end(&s, 1) == 0) {
		if (st.state != CW_RAS_ANSWERED || !st.truncated)
			abort();
		check_bounds(&st);
	} else if (st.state != CW_RAS_BAD_REPLY) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cw_ras_status st;
	int ret;
	char *buf, *s;
	json_t *j;

	if (size > (1u << 20))
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	ret = cw_ras_parse_json(buf, size, &st);
	if (ret == 0) {
		if (st.state != CW_RAS_ANSWERED)
			abort();
		check_bounds(&st);
	} else if (st.state != CW_RAS_BAD_REPLY) {
		abort();
	}
	streamed(buf, size, size ? 1 + data[0] % 17 : 1, &st, ret);
	j = cw_ras_status_json(&st);
	if (!json_is_object(j))
		abort();
	s = json_dumps(j, JSON_COMPACT);
	if (!s)
		abort();
	free(s);
	json_decref(j);
	free(buf);
	return 0;
}
