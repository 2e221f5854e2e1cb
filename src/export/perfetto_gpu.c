/* GPU telemetry in the Perfetto export: per node and device, counter
 * tracks of utilization, memory, SM clock, temperature and power (one
 * point per NVML sample), clock-event reasons as 0/1 series, and each Xid
 * fault as an instant marker on the node's process. A store without the
 * GPU tables (an older file) exports none. See docs/gpu.md. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export/perfetto_int.h"
#include "gpu/gpu.h"
#include "store/store.h"

static int missing(sqlite3 *db, int rc)
{
	return rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such table");
}

static void put(json_t *args, const char *key, sqlite3_stmt *st, int col, double scale)
{
	if (sqlite3_column_type(st, col) != SQLITE_NULL)
		json_object_set_new(args, key, json_real((double)sqlite3_column_int64(st, col) * scale));
}

static int counter(struct pf_ctx *c, const struct pf_node *n, int64_t wall, const char *name, json_t *args)
{
	if (!json_object_size(args)) {
		json_decref(args);
		return 0;
	}
	c->st->counters++;
	return cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:s,s:i,s:i,s:o,s:o}", "ph", "C", "name", name, "cat", "gpu",
						"pid", n->pid, "tid", 0, "ts", pf_ts(c, n, wall), "args", args));
}

int pf_emit_gpu(struct pf_ctx *c, int ni)
{
	static const char sql[] =
		"SELECT wall_ns, device, gpu_util, mem_util, mem_used, sm_mhz, mem_mhz, temp_gpu, power_mw, clock_reasons"
		" FROM gpu_samples WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3 ORDER BY wall_ns, id";
	static const char xsql[] = "SELECT wall_ns, arg0, pid, comm, device, detail FROM events"
				   " WHERE node = ?1 AND source = 'gpu' AND op = 'xid' AND wall_ns BETWEEN ?2 AND ?3";
	const struct pf_node *n = &c->nodes[ni];
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return missing(c->db, rc) ? 0 : -EIO;
	sqlite3_bind_text(st, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n->from);
	sqlite3_bind_int64(st, 3, n->to);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t wall = sqlite3_column_int64(st, 0), reasons;
		int dev = sqlite3_column_int(st, 1);
		char name[48];
		json_t *a;

		snprintf(name, sizeof(name), "gpu%d utilization %%", dev);
		a = json_object();
		put(a, "gpu %", st, 2, 1);
		put(a, "mem %", st, 3, 1);
		ret = counter(c, n, wall, name, a);
		snprintf(name, sizeof(name), "gpu%d memory used GiB", dev);
		a = json_object();
		put(a, "used GiB", st, 4, 1.0 / (1 << 30));
		if (!ret)
			ret = counter(c, n, wall, name, a);
		snprintf(name, sizeof(name), "gpu%d clocks MHz", dev);
		a = json_object();
		put(a, "sm MHz", st, 5, 1);
		put(a, "mem MHz", st, 6, 1);
		if (!ret)
			ret = counter(c, n, wall, name, a);
		snprintf(name, sizeof(name), "gpu%d temperature C / power W", dev);
		a = json_object();
		put(a, "temp C", st, 7, 1);
		put(a, "power W", st, 8, 1e-3);
		if (!ret)
			ret = counter(c, n, wall, name, a);
		if (!ret && sqlite3_column_type(st, 9) != SQLITE_NULL) {
			reasons = sqlite3_column_int64(st, 9);
			snprintf(name, sizeof(name), "gpu%d clock-event reasons", dev);
			ret = counter(c, n, wall, name,
				      json_pack("{s:i,s:i,s:i}", "thermal", !!(reasons & (int64_t)CW_GPU_REASON_THERMAL),
						"power", !!(reasons & (int64_t)CW_GPU_REASON_POWER), "hw slowdown",
						!!(reasons & (int64_t)CW_GPU_REASON_HW_SLOWDOWN)));
		}
	}
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(st);
	if (ret)
		return ret;
	if (sqlite3_prepare_v2(c->db, xsql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n->from);
	sqlite3_bind_int64(st, 3, n->to);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		char name[32];
		const char *comm = (const char *)sqlite3_column_text(st, 3);
		const char *detail = (const char *)sqlite3_column_text(st, 5);

		snprintf(name, sizeof(name), "Xid %lld", (long long)sqlite3_column_int64(st, 1));
		ret = cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:s,s:s,s:i,s:I,s:o,s:{s:I,s:o,s:i,s:o}}", "ph", "i",
						       "name", name, "cat", "gpu", "s", "p", "pid", n->pid, "tid",
						       (json_int_t)sqlite3_column_int64(st, 2), "ts",
						       pf_ts(c, n, sqlite3_column_int64(st, 0)), "args", "pid",
						       (json_int_t)sqlite3_column_int64(st, 2), "comm",
						       cw_trace_str(comm ? comm : ""), "device", sqlite3_column_int(st, 4),
						       "detail", cw_trace_str(detail ? detail : "")));
	}
	if (!ret && rc != SQLITE_DONE)
		ret = -EIO;
	sqlite3_finalize(st);
	return ret;
}
