/* /api/v1/gpu and /api/v1/nccl/ranks: the GPU health and NCCL panels
 * (docs/api.md). GPU devices, samples and Xid faults as the GPU telemetry
 * stores them (docs/gpu.md); the rank table is `explain --ranks`'s own
 * (cw_nccl_ranks_json). A file without those tables answers empty arrays. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/explain.h"
#include "gpu/xid.h"
#include "store/store.h"
#include "util/timeutil.h"

#define GPU_MAX_POINTS 300
#define GPU_MAX_XID 1000
#define GPU_MAX_DEVICES 64

/* The device and its newest sample in the window. */
static const char SQL_DEVICES[] =
	"SELECT d.device, d.uuid, d.name, d.pci_bus_id, d.memory_total, d.power_limit_mw, d.max_sm_mhz, d.driver,"
	" d.node, s.wall_ns, s.gpu_util, s.mem_util, s.mem_used, s.temp_gpu, s.power_mw, s.sm_mhz, s.clock_reasons,"
	" s.ecc_dbe, s.nvlink_errors FROM gpu_devices d LEFT JOIN gpu_samples s ON s.id ="
	" (SELECT id FROM gpu_samples x WHERE x.node = d.node AND x.device = d.device AND x.wall_ns >= ?1"
	" AND x.wall_ns < ?2 ORDER BY x.wall_ns DESC LIMIT 1) ORDER BY d.node, d.device LIMIT ?3";

/* Per device and bucket, the highest readings: a throttle or a spike of
 * one sample survives the downsampling (clock reasons are OR-ed bits,
 * max keeps the worst of the bucket's values). */
static const char SQL_SAMPLES[] =
	"SELECT min(wall_ns), device, max(gpu_util), max(mem_used), max(temp_gpu), max(power_mw),"
	" max(clock_reasons), max(sm_mhz) FROM gpu_samples WHERE node IN (SELECT node FROM gpu_devices)"
	" AND wall_ns >= ?1 AND wall_ns < ?2 GROUP BY device, (wall_ns - ?1) / ?3 ORDER BY device, 1";

/* Xid events are kernel-side: kevents (schema v7; in an older file a
 * temporary view of events), so the rowid range does not also walk the
 * calls under the events view. */
static const char SQL_XID[] =
	"SELECT wall_ns, device, arg0, detail, pid, comm FROM kevents"
	" WHERE id >= ?1 AND id < ?2 AND source = 'gpu' AND op = 'xid' AND wall_ns >= ?3 AND wall_ns < ?4"
	" ORDER BY id LIMIT ?5";

static int no_table(sqlite3 *db, int rc)
{
	return rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such table");
}

/* sql with ?1, ?2 the window and ?3 n. Returns 1 with *st ready, 0 when
 * the store has no GPU tables (nothing to answer), or -errno. */
static int prepare_window(sqlite3 *db, const char *sql, uint64_t from, uint64_t to, int64_t n, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);

	if (rc != SQLITE_OK)
		return no_table(db, rc) ? 0 : cw_sqlite_errno(rc);
	sqlite3_bind_int64(*st, 1, (int64_t)from);
	sqlite3_bind_int64(*st, 2, (int64_t)to);
	sqlite3_bind_int64(*st, 3, n);
	return 1;
}

static int gpu_devices(sqlite3 *db, uint64_t from, uint64_t to, json_t *out)
{
	sqlite3_stmt *st;
	int rc;

	if ((rc = prepare_window(db, SQL_DEVICES, from, to, GPU_MAX_DEVICES, &st)) <= 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *latest = sqlite3_column_type(st, 9) == SQLITE_NULL
					 ? json_null()
					 : json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "t_ns",
						     cw_api_int_or_null(st, 9), "util", cw_api_int_or_null(st, 10),
						     "mem_util", cw_api_int_or_null(st, 11), "mem_used",
						     cw_api_int_or_null(st, 12), "temp_c", cw_api_int_or_null(st, 13),
						     "power_mw", cw_api_int_or_null(st, 14), "sm_mhz",
						     cw_api_int_or_null(st, 15), "throttle_reasons",
						     cw_api_int_or_null(st, 16), "ecc_dbe", cw_api_int_or_null(st, 17),
						     "nvlink_errors", cw_api_int_or_null(st, 18));

		json_array_append_new(out, json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "index",
						     (json_int_t)sqlite3_column_int64(st, 0), "uuid", cw_api_text(st, 1),
						     "name", cw_api_text(st, 2), "pci_bus_id", cw_api_text(st, 3),
						     "memory_total", cw_api_int_or_null(st, 4), "power_limit_mw",
						     cw_api_int_or_null(st, 5), "max_sm_mhz", cw_api_int_or_null(st, 6),
						     "driver", cw_api_text(st, 7), "node", cw_api_text(st, 8), "latest",
						     latest));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static int gpu_samples(sqlite3 *db, uint64_t from, uint64_t to, json_t *out)
{
	int64_t bucket = (int64_t)((to - from + GPU_MAX_POINTS - 1) / GPU_MAX_POINTS);
	sqlite3_stmt *st;
	int rc;

	if ((rc = prepare_window(db, SQL_SAMPLES, from, to, bucket > 0 ? bucket : 1, &st)) <= 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *pw = sqlite3_column_type(st, 5) == SQLITE_NULL
				     ? json_null()
				     : json_real((double)sqlite3_column_int64(st, 5) / 1000.0);

		json_array_append_new(out, json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "t_ns",
						     (json_int_t)sqlite3_column_int64(st, 0), "index",
						     (json_int_t)sqlite3_column_int64(st, 1), "util",
						     cw_api_int_or_null(st, 2), "mem_used", cw_api_int_or_null(st, 3),
						     "temp_c", cw_api_int_or_null(st, 4), "power_w", pw,
						     "throttle_reasons", cw_api_int_or_null(st, 6), "sm_mhz",
						     cw_api_int_or_null(st, 7)));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* Xid faults: rare, so one pass over the window's rowid range. */
static int gpu_xid(sqlite3 *db, uint64_t from, uint64_t to, json_t *out)
{
	sqlite3_stmt *st;
	int64_t lo, hi;
	int rc;

	if ((rc = cw_events_id_at(db, from, &lo)) < 0 || (rc = cw_events_id_at(db, to + 2 * NSEC_PER_SEC, &hi)) < 0)
		return rc;
	rc = sqlite3_prepare_v2(db, SQL_XID, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_int64(st, 3, (int64_t)from);
	sqlite3_bind_int64(st, 4, (int64_t)to);
	sqlite3_bind_int(st, 5, GPU_MAX_XID);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t code = sqlite3_column_int64(st, 2);
		const struct cw_xid_info *xi = cw_xid_lookup((uint32_t)(code > 0 ? code : 0));

		json_array_append_new(out, json_pack("{s:I, s:o, s:I, s:s, s:s, s:s, s:o, s:o, s:o}", "t_ns",
						     (json_int_t)sqlite3_column_int64(st, 0), "index",
						     cw_api_int_or_null(st, 1), "code", (json_int_t)code, "text", xi->name,
						     "severity", xi->severity, "action", xi->action, "detail",
						     cw_api_text(st, 3), "pid", cw_api_int_or_null(st, 4), "comm",
						     cw_api_text(st, 5)));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* The window, defaulting to all data; 0 or -errno (r filled). */
static int window_or_all(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, uint64_t deadline, uint64_t *from,
			 uint64_t *to, struct cw_reply *r)
{
	uint64_t lo, hi;
	int rc;

	if (cw_api_window(db, c, from, to, r))
		return -EINVAL;
	if ((rc = cw_api_data_range(db, &lo, &hi))) {
		cw_api_fail(s, deadline, rc, "reading the window", r);
		return rc;
	}
	*from = *from ? *from : lo;
	*to = *to ? *to : hi;
	return 0;
}

void cw_route_gpu(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	json_t *devices = json_array(), *samples = json_array(), *xid = json_array();
	uint64_t deadline, from, to;
	sqlite3 *db;
	int rc;

	if (cw_api_open(s, &db, &deadline, r))
		goto out_nodb;
	if (window_or_all(s, c, db, deadline, &from, &to, r))
		goto out;
	if (to > from && ((rc = gpu_devices(db, from, to, devices)) || (rc = gpu_samples(db, from, to, samples)) ||
			  (rc = gpu_xid(db, from, to, xid)))) {
		cw_api_fail(s, deadline, rc, "gpu", r);
		goto out;
	}
	cw_reply_json(r, 200,
		      json_pack("{s:s, s:I, s:I, s:O, s:O, s:O}", "node", s->node, "from_ns", (json_int_t)from, "to_ns",
				(json_int_t)to, "devices", devices, "samples", samples, "xid", xid));
out:
	cw_server_close_db(db);
out_nodb:
	json_decref(devices);
	json_decref(samples);
	json_decref(xid);
}

void cw_route_nccl_ranks(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct cw_explain_opts o = { 0 };
	uint64_t deadline, from, to;
	json_t *ranks;
	sqlite3 *db;

	if (cw_api_int(c, "pid", 1, INT32_MAX, 0, &o.pid, r))
		return;
	if (cw_api_open(s, &db, &deadline, r))
		return;
	if (window_or_all(s, c, db, deadline, &from, &to, r))
		goto out;
	o.from_wall_ns = from;
	o.to_wall_ns = to;
	o.node_filter = cw_api_arg(c, "node");
	if (!(ranks = cw_nccl_ranks_json(db, &o, from, to))) {
		cw_api_fail(s, deadline, -EIO, "the rank table", r);
		goto out;
	}
	cw_reply_json(r, 200, cw_api_window_answer(s, from, to, "ranks", ranks));
out:
	cw_server_close_db(db);
}
