/* explain --ranks: one row per rank calling NCCL collectives (explain.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "analysis/rules/nccl_load.h"

static int cmp_rank_json(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t rx = json_is_integer(json_object_get(x, "rank")) ? json_integer_value(json_object_get(x, "rank")) : 1 << 30;
	json_int_t ry = json_is_integer(json_object_get(y, "rank")) ? json_integer_value(json_object_get(y, "rank")) : 1 << 30;
	int c;

	if (rx != ry)
		return rx < ry ? -1 : 1;
	if ((c = strcmp(json_string_value(json_object_get(x, "node")), json_string_value(json_object_get(y, "node")))))
		return c;
	return json_integer_value(json_object_get(x, "pid")) < json_integer_value(json_object_get(y, "pid")) ? -1 : 1;
}

json_t *cw_nccl_ranks_json(sqlite3 *db, const struct cw_explain_opts *o, uint64_t from_wall, uint64_t to_wall)
{
	struct cw_nccl_loaded l;
	struct cw_nccl_arrival *a = malloc(sizeof(*a));
	json_t *arr = json_array();
	int64_t until = 0;

	if (!a || !arr || cw_nccl_load(db, o->node_filter, from_wall, to_wall, &l) < 0) {
		free(a);
		json_decref(arr);
		return NULL;
	}
	if (l.nranks && (cw_nccl_observed_until(db, &l, &until) < 0 ||
			 cw_nccl_arrival_analyse(l.calls, l.n, l.ranks, l.nranks, until, o->hang_min_ns, a) < 0)) {
		json_decref(arr);
		arr = NULL;
		l.nranks = 0;
	}
	for (int i = 0; i < l.nranks; i++) {
		const struct cw_nccl_rank *r = &l.ranks[i];
		int missing = 0;
		json_t *j;

		for (int k = 0; a->hang && k < a->nmissing; k++)
			missing |= a->missing[k] == i;
		j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b}", "node", r->node, "pid",
			      (json_int_t)r->pid, "tid", (json_int_t)r->tid, "collectives", (json_int_t)r->calls, "late",
			      (json_int_t)r->late, "lag_ns", (json_int_t)r->lag_ns, "mean_lag_ns",
			      (json_int_t)(r->late ? r->lag_ns / r->late : 0), "last_seq", (json_int_t)r->last_seq,
			      "waited_for_straggler_ns", (json_int_t)r->waited_ns, "straggler", a->straggler == i,
			      "missing", missing);
		json_object_set_new(j, "rank", r->rank >= 0 ? json_integer(r->rank) : json_null());
		json_object_set_new(j, "comm_wait_share",
				    json_real(r->step_ns ? (double)((uint64_t)(1000.0 * (double)r->wait_ns /
								    (double)r->step_ns)) / 1000.0 : 0));
		json_array_append_new(arr, j);
	}
	if (arr && json_array_size(arr) > 1) {
		size_t n = json_array_size(arr);
		json_t **v = malloc(n * sizeof(*v));

		if (v) {
			for (size_t i = 0; i < n; i++)
				v[i] = json_incref(json_array_get(arr, i));
			qsort(v, n, sizeof(*v), cmp_rank_json);
			json_array_clear(arr);
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, v[i]);
			free(v);
		}
	}
	free(a);
	cw_nccl_loaded_free(&l);
	return arr;
}
