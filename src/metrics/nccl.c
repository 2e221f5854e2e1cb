/* /metrics, NCCL part: per rank, the arrival analysis of the last five
 * minutes of collectives (analysis/nccl_arrival.c through explain's
 * --ranks path): collectives entered, times last and the lag, the last
 * sequence number, and whether a hang waits for it. Bounded: the window
 * ends at the newest stored collective. */
#include "metrics/families.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "analysis/explain.h"
#include "util/timeutil.h"

#define NCCL_WINDOW_NS (300 * NSEC_PER_SEC)

static void label_series(struct strbuf *sb, const char *name, json_t *r)
{
	json_t *rank = json_object_get(r, "rank");

	strbuf_adds(sb, name);
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, json_string_value(json_object_get(r, "node")));
	strbuf_addf(sb, "\",pid=\"%lld\",rank=\"", (long long)json_integer_value(json_object_get(r, "pid")));
	if (json_is_integer(rank))
		strbuf_addf(sb, "%lld", (long long)json_integer_value(rank));
	strbuf_addch(sb, '"');
	cw_prom_tenant_labels(sb, json_string_value(json_object_get(r, "container")),
			      json_string_value(json_object_get(r, "pod")),
			      json_string_value(json_object_get(r, "namespace")));
	strbuf_addch(sb, '}');
}

/* The tenant of each rank's process, where the store named its cgroup
 * (one series per rank already: the labels add none). */
static void add_tenants(sqlite3 *db, json_t *rows)
{
	sqlite3_stmt *st = NULL;
	json_t *r;
	size_t i;

	if (sqlite3_prepare_v2(db,
			       "SELECT coalesce(c.container_id, 'slurm-job-' || c.slurm_job), c.pod, c.namespace"
			       " FROM processes p JOIN cgroups c ON c.node = p.node AND c.cgroup_id = p.cgroup_id"
			       " WHERE p.node = ?1 AND p.pid = ?2 LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return; /* a store from before the identity columns */
	json_array_foreach(rows, i, r) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, json_string_value(json_object_get(r, "node")), -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, json_integer_value(json_object_get(r, "pid")));
		if (sqlite3_step(st) != SQLITE_ROW)
			continue;
		for (int k = 0; k < 3; k++) {
			const char *v = (const char *)sqlite3_column_text(st, k);

			if (v)
				json_object_set_new(r, k == 0 ? "container" : k == 1 ? "pod" : "namespace",
						    json_string(v));
		}
	}
	sqlite3_finalize(st);
}

int cw_metrics_render_nccl(sqlite3 *db, struct strbuf *sb)
{
	static const struct {
		const char *name, *key, *help, *type;
		double scale;
	} m[] = {
		{ "causeway_nccl_collectives", "collectives", "NCCL collectives entered in the last 5 minutes of data.",
		  "gauge", 1 },
		{ "causeway_nccl_late_collectives", "late",
		  "Collectives this rank entered last (>= 100 us after the next), last 5 minutes.", "gauge", 1 },
		{ "causeway_nccl_arrival_lag_seconds", "lag_ns",
		  "Summed lag of this rank's late arrivals, last 5 minutes.", "gauge", 1e-9 },
		{ "causeway_nccl_last_seq", "last_seq", "The last collective sequence number this rank entered.",
		  "gauge", 1 },
		{ "causeway_nccl_hang_missing", "missing",
		  "1 when a collective has waited for this rank past the nccl_hang threshold.", "gauge", 1 },
	};
	struct cw_explain_opts o = { 0 };
	sqlite3_stmt *st = NULL;
	int64_t newest = 0;
	json_t *rows;
	size_t i;

	if (sqlite3_prepare_v2(db, "SELECT max(wall_ns) FROM nccl_calls", -1, &st, NULL) != SQLITE_OK)
		return 0; /* a store from before nccl_calls: nothing to say */
	if (sqlite3_step(st) == SQLITE_ROW)
		newest = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (newest <= 0)
		return 0;
	rows = cw_nccl_ranks_json(db, &o, newest > (int64_t)NCCL_WINDOW_NS ? (uint64_t)newest - NCCL_WINDOW_NS : 0,
				  (uint64_t)newest);
	if (!rows)
		return -EIO;
	add_tenants(db, rows);
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]) && json_array_size(rows); k++) {
		json_t *r;

		strbuf_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", m[k].name, m[k].help, m[k].name, m[k].type);
		json_array_foreach(rows, i, r) {
			json_t *v = json_object_get(r, m[k].key);
			double x = json_is_boolean(v) ? json_is_true(v) : (double)json_integer_value(v) * m[k].scale;

			label_series(sb, m[k].name, r);
			strbuf_addf(sb, " %.9g\n", x);
		}
	}
	json_decref(rows);
	return 0;
}
