/* Fuzzes the NCCL RAS report parser (gpu/nccl_ras.h): whatever listens on
 * the RAS port answers what it likes. Input: the STATUS reply (an exact-
 * size heap copy, so a read past the end is caught). The parsed status
 * must stay within its bounds, and its JSON (what trace stores and explain
 * re-reads) must be a JSON object that jansson can write. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/nccl_ras.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_ras_status st;
	char *buf, *s;
	json_t *j;

	if (size > (1u << 20))
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (cw_ras_parse_json(buf, size, &st) == 0) {
		if (st.state != CW_RAS_ANSWERED || st.ncomms < 0)
			abort();
		for (int i = 0; i < st.ncomms && i < CW_RAS_MAX_COMMS; i++) {
			const struct cw_ras_comm *c = &st.comms[i];

			if (c->nbehind < 0 || c->nbehind > CW_RAS_MAX_LISTED || c->nmissing_listed < 0 ||
			    c->nmissing_listed > CW_RAS_MAX_LISTED || c->missing_count < c->nmissing_listed ||
			    c->min_collectives > c->max_collectives || memchr(c->hash, 0, sizeof(c->hash)) == NULL)
				abort();
			for (int k = 0; k < c->nbehind; k++)
				if (c->behind[k].collectives >= c->max_collectives)
					abort();
		}
	} else if (st.state != CW_RAS_BAD_REPLY) {
		abort();
	}
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
