/* nccl_hang's "ras": what the job's NCCL RAS service answered when trace
 * asked at the hang (trace/ras.h, stored JSON in chain->ras), for the
 * JSON and text reports (docs/nccl.md "NCCL RAS"). */
#include "analysis/ras_report.h"

#include <stdio.h>
#include <string.h>

json_t *cw_chain_ras_json(const struct cw_chain *c)
{
	json_t *d = c->ras[0] ? json_loads(c->ras, 0, NULL) : NULL;

	if (json_is_object(d) && json_is_string(json_object_get(d, "status")))
		return d;
	json_decref(d);
	return json_pack("{s:s}", "status", "not_asked");
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/* "rank 3 (pid 1003) at 9" for the ranks of arr, at most 4. */
static size_t ranks_text(const json_t *arr, int with_count, char *buf, size_t len)
{
	size_t off = 0, i;
	const json_t *r;

	buf[0] = '\0';
	json_array_foreach((json_t *)arr, i, r) {
		if (i == 4) {
			off += (size_t)snprintf(buf + off, len - off, ", ...");
			break;
		}
		off += (size_t)snprintf(buf + off, len - off, "%srank %lld (pid %lld on %s)", i ? ", " : "",
					(long long)json_integer_value(json_object_get(r, "rank")),
					(long long)json_integer_value(json_object_get(r, "pid")), str(r, "host"));
		if (off < len && with_count)
			off += (size_t)snprintf(buf + off, len - off, " at %lld collectives",
						(long long)json_integer_value(json_object_get(r, "collectives")));
		if (off >= len)
			return len;
	}
	return off;
}

void cw_chain_ras_text(const struct cw_chain *c, char *buf, size_t len)
{
	json_t *d = cw_chain_ras_json(c), *comms, *co;
	const char *st = str(d, "status");
	size_t off = 0, i;

	if (!strcmp(st, "not_asked"))
		snprintf(buf, len, "not asked (trace asks NCCL RAS when it sees the hang while tracing: --hang-after)");
	else if (!strcmp(st, "no_answer"))
		snprintf(buf, len, "did not answer (%s)", str(d, "why"));
	else if (!strcmp(st, "text_only"))
		snprintf(buf, len, "answered without a JSON report (%s)", str(d, "why"));
	else if (strcmp(st, "answered"))
		snprintf(buf, len, "answered something else (%s)", str(d, "why"));
	else {
		off = (size_t)snprintf(buf, len, "answered (NCCL %s, %lld communicator%s)", str(d, "nccl_version"),
				       (long long)json_integer_value(json_object_get(d, "communicators")),
				       json_integer_value(json_object_get(d, "communicators")) == 1 ? "" : "s");
		comms = json_object_get(d, "comms");
		json_array_foreach(comms, i, co) {
			char behind[400], missing[400];

			if (off >= len || i == 2)
				break;
			ranks_text(json_object_get(co, "behind"), 1, behind, sizeof(behind));
			ranks_text(json_object_get(co, "missing"), 0, missing, sizeof(missing));
			off += (size_t)snprintf(buf + off, len - off, "; communicator %s of %lld ranks: most at %lld"
						" collectives%s%s%s%s", str(co, "hash"),
						(long long)json_integer_value(json_object_get(co, "size")),
						(long long)json_integer_value(json_object_get(co, "collectives_max")),
						behind[0] ? ", behind: " : "", behind, missing[0] ? ", not reached: " : "",
						missing);
		}
	}
	json_decref(d);
}
