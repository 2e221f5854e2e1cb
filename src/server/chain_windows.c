/* The window of a chain on the timeline: its timeline's span, padded, as
 * /chains answers it (timeline_window) and /timeline?chain= opens it. */
#include "server/routes_api.h"

#include <stdint.h>

#include "analysis/explain.h"
#include "util/timeutil.h"

/* A chain's window is padded by this share of its length on each side. */
#define CHAIN_PAD 0.2

/* The window of a chain's thread timeline: its timeline entries to the end
 * of its slowest call, padded 20 % on each side (what timeline?chain=
 * reads). */
static void cw_chain_window(const struct cw_chain *ch, const struct cw_explain_result *res, uint64_t *from,
			    uint64_t *to)
{
	uint64_t lo = UINT64_MAX, hi = 0, pad;

	for (int i = 0; i < ch->ntimeline; i++) {
		lo = ch->timeline[i].t_ns < lo ? ch->timeline[i].t_ns : lo;
		hi = ch->timeline[i].t_ns > hi ? ch->timeline[i].t_ns : hi;
	}
	if (!ch->ntimeline) {
		lo = res->from_wall_ns;
		hi = res->to_wall_ns;
	}
	hi += ch->max_ns ? ch->max_ns : NSEC_PER_MSEC;
	pad = (uint64_t)((double)(hi - lo) * CHAIN_PAD);
	*from = lo > pad ? lo - pad : 0;
	*to = hi + pad;
}

void cw_chains_add_windows(const struct cw_explain_result *res, json_t *j)
{
	json_t *arr = json_object_get(j, "chains");

	for (int i = 0; i < res->count && i < (int)json_array_size(arr); i++) {
		uint64_t from, to;

		cw_chain_window(&res->chains[i], res, &from, &to);
		json_object_set_new(json_array_get(arr, (size_t)i), "timeline_window",
				    json_pack("{s:I, s:I, s:I, s:I}", "from_ns", (json_int_t)from, "to_ns",
					      (json_int_t)to, "pid", (json_int_t)res->chains[i].pid, "tid",
					      (json_int_t)res->chains[i].tid));
	}
}
