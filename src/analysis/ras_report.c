/* nccl_hang's "ras": what the job's NCCL RAS service answered when trace
 * asked at the hang (trace/ras.h, stored JSON in chain->ras), for the
 * JSON and text reports (docs/nccl.md "NCCL RAS"). */
#include "analysis/ras_report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Removes the last element of the longest list of the answer's
 * communicators (then the last communicator, then its text); 0 when
 * nothing is left to cut. */
static int cut_one(json_t *d)
{
	static const char *const lists[] = {"behind", "missing", "missing_ranks"};
	json_t *comms = json_object_get(d, "comms"), *best = NULL, *co;
	size_t i, most = 0;

	json_array_foreach(comms, i, co)
		for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
			json_t *a = json_object_get(co, lists[k]);

			if (json_array_size(a) > most) {
				most = json_array_size(a);
				best = a;
			}
		}
	if (best)
		return json_array_remove(best, most - 1) == 0;
	if (json_array_size(comms))
		return json_array_remove(comms, json_array_size(comms) - 1) == 0;
	if (json_string_length(json_object_get(d, "text")) > 64) {
		/* Kept as far as it fits: its first half, cut at a character. */
		const char *t = json_string_value(json_object_get(d, "text"));
		size_t n = json_string_length(json_object_get(d, "text"));

		n /= 2;
		while (n && ((unsigned char)t[n] & 0xc0) == 0x80)
			n--;
		return json_object_set_new(d, "text", json_stringn(t, n)) == 0;
	}
	return 0;
}

int cw_ras_fit(json_t *d, char *buf, size_t len)
{
	for (int round = 0; round < 4096; round++) {
		char *s = json_dumps(d, JSON_COMPACT);
		size_t n = s ? strlen(s) : 0;

		if (s && n < len) {
			memcpy(buf, s, n + 1);
			free(s);
			return 0;
		}
		free(s);
		json_object_set_new(d, "listed_cut", json_true());
		if (!cut_one(d))
			break;
	}
	buf[0] = '\0';
	return -ENOSPC;
}

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

/* "answered (NCCL 2.29.1, 1 communicator); communicator ... behind: ..." */
static void answer_text(const json_t *d, char *buf, size_t len)
{
	size_t off = 0, i;
	json_t *comms, *co;

	off = (size_t)snprintf(buf, len, "(NCCL %s, %lld communicator%s)", str(d, "nccl_version"),
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

void cw_chain_ras_text(const struct cw_chain *c, char *buf, size_t len)
{
	json_t *d = cw_chain_ras_json(c);
	const char *st = str(d, "status");
	int truncated = json_is_true(json_object_get(d, "truncated"));
	char what[1200];

	if (!strcmp(st, "not_asked"))
		snprintf(buf, len, "not asked (trace asks NCCL RAS when it sees the hang while tracing: --hang-after)");
	else if (!strcmp(st, "no_answer"))
		snprintf(buf, len, "asked, did not answer (%s)", str(d, "why"));
	else if (!strcmp(st, "unverified")) {
		/* Whatever it says, it is not shown as NCCL's. */
		if (!strcmp(str(d, "answer"), "text_only"))
			snprintf(what, sizeof(what), "a text report");
		else
			answer_text(d, what, sizeof(what));
		snprintf(buf, len, "answered by a listener not of the traced job, unverified (%s)%s: it claims %s",
			 str(d, "source_why"), truncated ? ", truncated" : "", what);
	} else if (!strcmp(st, "text_only"))
		snprintf(buf, len, "answered without a JSON report%s (%s)", truncated ? ", truncated" : "", str(d, "why"));
	else if (strcmp(st, "answered"))
		snprintf(buf, len, "answered something else (%s)", str(d, "why"));
	else {
		answer_text(d, what, sizeof(what));
		snprintf(buf, len, "answered%s %s", truncated ? ", answer truncated at 1 MiB or a value over 16 KiB skipped"
			 : json_is_true(json_object_get(d, "listed_cut")) ? ", lists cut to fit" : "", what);
	}
	json_decref(d);
}
