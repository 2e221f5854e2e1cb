/* /metrics, GPU health: each device's newest stored sample (gpu_samples,
 * written by trace's NVML sampler), its per-process device memory at that
 * sample (gpu_processes), and Xid faults by code (events source 'gpu', op
 * 'xid'). Names follow Prometheus conventions (bytes, watts, hertz,
 * ratios); docs/metrics.md maps each family to its DCGM exporter field.
 *
 * Cost: the device list is small; a device's newest sample is one seek
 * down the (node, wall_ns) index; Xid faults are found through the
 * per-second aggregates (the seconds that hold any) and read by rowid
 * around those seconds only, so a scrape never scans the events table. */
#define _GNU_SOURCE
#include "metrics/families.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "gpu/gpu.h"
#include "gpu/xid.h"
#include "store/store.h"
#include "util/timeutil.h"

#define MAX_DEVICES 1024
#define MAX_XID_SERIES 4096
/* Rows are appended roughly in time order; an Xid from NVML is stored 2 s
 * after it happened (docs/gpu.md). Each second that holds a fault is read
 * by rowid from this much before it to this much after it. */
#define XID_ID_SLACK_BEFORE_NS (5 * NSEC_PER_SEC)
#define XID_ID_SLACK_AFTER_NS (30 * NSEC_PER_SEC)

struct dev {
	char node[64];
	int device;
	char uuid[96], pci[32], model[96];
	int64_t power_limit_mw; /* -1 unknown */
	int64_t wall_ns;        /* newest sample; 0 none */
	int64_t r[CW_GPU_NREADINGS];
};

/* Indexes into the readings (gpu_samples columns gpu_util .. nvlink_errors). */
enum {
	R_GPU_UTIL, R_MEM_UTIL, R_MEM_USED, R_MEM_FREE, R_MEM_RESERVED, R_MEM_TOTAL, R_TEMP_GPU, R_TEMP_MEM,
	R_POWER_MW, R_ENERGY_MJ, R_SM_MHZ, R_MEM_MHZ, R_REASONS, R_ECC_SBE, R_ECC_DBE, R_PCIE_REPLAY,
	R_RETIRED_SBE, R_RETIRED_DBE, R_REMAP_CORR, R_REMAP_UNC, R_REMAP_PENDING, R_REMAP_FAILURE, R_NVLINK,
};
_Static_assert(R_NVLINK == CW_GPU_NREADINGS - 1, "one index per gpu_samples reading");

static const char *text(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	return s ? s : "";
}

static int64_t opt(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, col);
}

/* name{node="..",gpu="..",uuid=".." without the closing brace. */
static void dev_labels(struct strbuf *sb, const char *name, const struct dev *d)
{
	strbuf_adds(sb, name);
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, d->node);
	strbuf_addf(sb, "\",gpu=\"%d\",uuid=\"", d->device);
	cw_prom_escape_label(sb, d->uuid);
	strbuf_addch(sb, '"');
}

static void family(struct strbuf *sb, const char *name, const char *type, const char *help)
{
	strbuf_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int load_devices(sqlite3 *db, struct dev **out, int *n)
{
	sqlite3_stmt *st = NULL, *smp = NULL;
	struct dev *v = NULL;
	int rc, k = 0;

	*out = NULL;
	*n = 0;
	/* A store from before the GPU tables: nothing to say. */
	if (sqlite3_prepare_v2(db,
			       "SELECT node, uuid, device, pci_bus_id, name, power_limit_mw FROM gpu_devices"
			       " ORDER BY node, device, uuid",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	rc = sqlite3_prepare_v2(db,
				"SELECT wall_ns, gpu_util, mem_util, mem_used, mem_free, mem_reserved, mem_total, temp_gpu,"
				" temp_mem, power_mw, energy_mj, sm_mhz, mem_mhz, clock_reasons, ecc_sbe, ecc_dbe, pcie_replay,"
				" retired_sbe, retired_dbe, remap_corr, remap_unc, remap_pending, remap_failure, nvlink_errors"
				" FROM gpu_samples WHERE node = ?1 AND device = ?2 ORDER BY wall_ns DESC LIMIT 1",
				-1, &smp, NULL);
	if (rc != SQLITE_OK)
		goto out;
	v = calloc(MAX_DEVICES, sizeof(*v));
	if (!v) {
		rc = SQLITE_NOMEM;
		goto out;
	}
	while (k < MAX_DEVICES && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct dev *d = &v[k];

		snprintf(d->node, sizeof(d->node), "%s", text(st, 0));
		snprintf(d->uuid, sizeof(d->uuid), "%s", text(st, 1));
		d->device = sqlite3_column_int(st, 2);
		snprintf(d->pci, sizeof(d->pci), "%s", text(st, 3));
		snprintf(d->model, sizeof(d->model), "%s", text(st, 4));
		d->power_limit_mw = opt(st, 5);
		sqlite3_bind_text(smp, 1, d->node, -1, SQLITE_STATIC);
		sqlite3_bind_int(smp, 2, d->device);
		rc = sqlite3_step(smp);
		if (rc == SQLITE_ROW) {
			d->wall_ns = sqlite3_column_int64(smp, 0);
			for (int i = 0; i < CW_GPU_NREADINGS; i++)
				d->r[i] = opt(smp, i + 1);
		} else if (rc != SQLITE_DONE) {
			sqlite3_reset(smp);
			goto out;
		}
		sqlite3_reset(smp);
		k++;
	}
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(smp);
	if (rc != SQLITE_OK) {
		free(v);
		return cw_sqlite_errno(rc);
	}
	*out = v;
	*n = k;
	return 0;
}

/* One gauge family over every device with a sample: reading i times scale,
 * skipping unknown readings. */
/* A family of two series per device, told apart by label: reading i0
 * as v0, reading i1 as v1 (those the sample has). */
static void split2(struct strbuf *sb, const struct dev *v, int n, const char *name, const char *type,
		   const char *help, const char *label, int i0, const char *v0, int i1, const char *v1)
{
	family(sb, name, type, help);
	for (int k = 0; k < n; k++)
		for (int s = 0; s < 2; s++) {
			int64_t x = v[k].r[s ? i1 : i0];

			if (!v[k].wall_ns || x < 0)
				continue;
			dev_labels(sb, name, &v[k]);
			strbuf_addf(sb, ",%s=\"%s\"} %lld\n", label, s ? v1 : v0, (long long)x);
		}
}

static void gauge(struct strbuf *sb, const struct dev *v, int n, const char *name, const char *type,
		  const char *help, int i, double scale)
{
	family(sb, name, type, help);
	for (int k = 0; k < n; k++) {
		if (!v[k].wall_ns || v[k].r[i] < 0)
			continue;
		dev_labels(sb, name, &v[k]);
		strbuf_addf(sb, "} %.15g\n", (double)v[k].r[i] * scale);
	}
}

static void render_devices(struct strbuf *sb, const struct dev *v, int n)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} reasons[] = {
		{ CW_GPU_REASON_IDLE, "idle" },
		{ CW_GPU_REASON_APP_CLOCKS, "app_clocks" },
		{ CW_GPU_REASON_SW_POWER_CAP, "sw_power_cap" },
		{ CW_GPU_REASON_HW_SLOWDOWN, "hw_slowdown" },
		{ CW_GPU_REASON_SYNC_BOOST, "sync_boost" },
		{ CW_GPU_REASON_SW_THERMAL, "sw_thermal" },
		{ CW_GPU_REASON_HW_THERMAL, "hw_thermal" },
		{ CW_GPU_REASON_HW_POWER_BRAKE, "hw_power_brake" },
		{ CW_GPU_REASON_DISPLAY, "display_clock" },
	};

	family(sb, "causeway_gpu_info", "gauge", "A GPU (or MIG instance) NVML reported, with its identity.");
	for (int k = 0; k < n; k++) {
		dev_labels(sb, "causeway_gpu_info", &v[k]);
		strbuf_adds(sb, ",pci_bus_id=\"");
		cw_prom_escape_label(sb, v[k].pci);
		strbuf_adds(sb, "\",model=\"");
		cw_prom_escape_label(sb, v[k].model);
		strbuf_adds(sb, "\"} 1\n");
	}
	family(sb, "causeway_gpu_last_sample_timestamp_seconds", "gauge",
	       "Wall time of the device's newest stored sample (the other GPU families show that sample).");
	for (int k = 0; k < n; k++) {
		if (!v[k].wall_ns)
			continue;
		dev_labels(sb, "causeway_gpu_last_sample_timestamp_seconds", &v[k]);
		strbuf_addf(sb, "} %.3f\n", (double)v[k].wall_ns / 1e9);
	}
	gauge(sb, v, n, "causeway_gpu_utilization_ratio", "gauge",
	      "Share of the last sample period a kernel ran on the GPU.", R_GPU_UTIL, 0.01);
	gauge(sb, v, n, "causeway_gpu_memory_utilization_ratio", "gauge",
	      "Share of the last sample period device memory was read or written.", R_MEM_UTIL, 0.01);
	gauge(sb, v, n, "causeway_gpu_memory_used_bytes", "gauge", "Device memory in use.", R_MEM_USED, 1);
	gauge(sb, v, n, "causeway_gpu_memory_free_bytes", "gauge", "Device memory free.", R_MEM_FREE, 1);
	gauge(sb, v, n, "causeway_gpu_memory_total_bytes", "gauge", "Device memory in all.", R_MEM_TOTAL, 1);
	split2(sb, v, n, "causeway_gpu_temperature_celsius", "gauge", "GPU die and memory temperature.", "sensor",
	       R_TEMP_GPU, "gpu", R_TEMP_MEM, "memory");
	gauge(sb, v, n, "causeway_gpu_power_watts", "gauge", "Board power draw.", R_POWER_MW, 1e-3);
	family(sb, "causeway_gpu_power_limit_watts", "gauge", "The enforced board power limit.");
	for (int k = 0; k < n; k++) {
		if (v[k].power_limit_mw < 0)
			continue;
		dev_labels(sb, "causeway_gpu_power_limit_watts", &v[k]);
		strbuf_addf(sb, "} %.9g\n", (double)v[k].power_limit_mw / 1e3);
	}
	gauge(sb, v, n, "causeway_gpu_energy_joules_total", "counter", "Energy the board used since the driver loaded.",
	      R_ENERGY_MJ, 1e-3);
	gauge(sb, v, n, "causeway_gpu_sm_clock_hertz", "gauge", "SM clock.", R_SM_MHZ, 1e6);
	gauge(sb, v, n, "causeway_gpu_memory_clock_hertz", "gauge", "Memory clock.", R_MEM_MHZ, 1e6);
	family(sb, "causeway_gpu_clock_event_active", "gauge",
	       "1 while NVML reports this clock-event (throttle) reason for the device, else 0.");
	for (int k = 0; k < n; k++) {
		if (!v[k].wall_ns || v[k].r[R_REASONS] < 0)
			continue;
		for (size_t b = 0; b < sizeof(reasons) / sizeof(reasons[0]); b++) {
			dev_labels(sb, "causeway_gpu_clock_event_active", &v[k]);
			strbuf_addf(sb, ",reason=\"%s\"} %d\n", reasons[b].name,
				    ((uint64_t)v[k].r[R_REASONS] & reasons[b].bit) ? 1 : 0);
		}
	}
	split2(sb, v, n, "causeway_gpu_ecc_errors_total", "counter",
	       "ECC errors since the driver loaded (volatile), corrected and uncorrected.", "type", R_ECC_SBE,
	       "corrected", R_ECC_DBE, "uncorrected");
	gauge(sb, v, n, "causeway_gpu_pcie_replays_total", "counter", "PCIe replays (link-level retransmissions).",
	      R_PCIE_REPLAY, 1);
	family(sb, "causeway_gpu_remapped_rows", "gauge",
	       "Memory rows remapped, by the kind of error that caused it (pending: waits for a reset; failure: "
	       "1 when a remap failed).");
	for (int k = 0; k < n; k++) {
		static const struct {
			int i;
			const char *kind;
		} rr[] = { { R_REMAP_CORR, "correctable" }, { R_REMAP_UNC, "uncorrectable" },
			   { R_REMAP_PENDING, "pending" }, { R_REMAP_FAILURE, "failure" } };

		for (size_t j = 0; j < sizeof(rr) / sizeof(rr[0]); j++) {
			if (!v[k].wall_ns || v[k].r[rr[j].i] < 0)
				continue;
			dev_labels(sb, "causeway_gpu_remapped_rows", &v[k]);
			strbuf_addf(sb, ",kind=\"%s\"} %lld\n", rr[j].kind, (long long)v[k].r[rr[j].i]);
		}
	}
	split2(sb, v, n, "causeway_gpu_retired_pages", "gauge", "Memory pages retired, by the error that caused it.",
	       "cause", R_RETIRED_SBE, "single_bit", R_RETIRED_DBE, "double_bit");
	gauge(sb, v, n, "causeway_gpu_nvlink_errors_total", "counter",
	      "NVLink replay, recovery and CRC errors over the active links.", R_NVLINK, 1);
}

/* Per-process device memory at the device's newest sample, named by the
 * process row (the main thread's row when there is none). */
static int render_processes(sqlite3 *db, struct strbuf *sb, const struct dev *v, int n)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db,
			       "SELECT g.pid, g.used_bytes, coalesce((SELECT comm FROM processes p WHERE p.node = g.node AND"
			       " p.pid = g.pid), (SELECT comm FROM threads t WHERE t.node = g.node AND t.tid = g.pid))"
			       " FROM gpu_processes g WHERE g.node = ?1 AND g.device = ?2 AND"
			       " g.wall_ns = ?3 AND g.used_bytes IS NOT NULL ORDER BY g.pid",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	family(sb, "causeway_gpu_process_memory_used_bytes", "gauge",
	       "Device memory a compute process holds, at the device's newest sample.");
	rc = SQLITE_DONE;
	for (int k = 0; k < n && rc == SQLITE_DONE; k++) {
		if (!v[k].wall_ns)
			continue;
		sqlite3_bind_text(st, 1, v[k].node, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, v[k].device);
		sqlite3_bind_int64(st, 3, v[k].wall_ns);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			dev_labels(sb, "causeway_gpu_process_memory_used_bytes", &v[k]);
			strbuf_addf(sb, ",pid=\"%lld\",process=\"", (long long)sqlite3_column_int64(st, 0));
			cw_prom_escape_label(sb, text(st, 2));
			strbuf_addf(sb, "\"} %lld\n", (long long)sqlite3_column_int64(st, 1));
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* ---- Xid faults ---- */

struct xid_count {
	char node[64];
	int64_t device; /* -1 unknown */
	int64_t code;
	uint64_t n;
};

struct id_range {
	char node[64];
	int64_t lo, hi;
};

static int by_labels(const void *a, const void *b)
{
	const struct xid_count *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	if (!c)
		c = x->device < y->device ? -1 : x->device > y->device;
	if (!c)
		c = x->code < y->code ? -1 : x->code > y->code;
	return c;
}

/* The rowid ranges that hold every Xid event: from the seconds the
 * aggregates say hold one, merged where they overlap. */
static int xid_ranges(sqlite3 *db, struct id_range **out, int *n)
{
	sqlite3_stmt *st;
	struct id_range *v = NULL;
	int k = 0, cap = 0, rc;

	*out = NULL;
	*n = 0;
	rc = sqlite3_prepare_v2(db,
				"SELECT node, second FROM aggregates WHERE source = 'gpu' AND op = 'xid'"
				" ORDER BY node, second",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t sec = (uint64_t)cw_clamp_second(sqlite3_column_int64(st, 1)) * NSEC_PER_SEC;
		int64_t lo, hi;
		const char *node = text(st, 0);

		if (cw_events_id_at(db, sec > XID_ID_SLACK_BEFORE_NS ? sec - XID_ID_SLACK_BEFORE_NS : 0, &lo) ||
		    cw_events_id_at(db, sec + NSEC_PER_SEC + XID_ID_SLACK_AFTER_NS, &hi))
			continue;
		if (k && !strcmp(v[k - 1].node, node) && lo <= v[k - 1].hi + 1) {
			if (hi > v[k - 1].hi)
				v[k - 1].hi = hi;
			continue;
		}
		if (k == cap) {
			struct id_range *nv = realloc(v, (size_t)(cap ? 2 * cap : 16) * sizeof(*v));

			if (!nv) {
				rc = SQLITE_NOMEM;
				break;
			}
			v = nv;
			cap = cap ? 2 * cap : 16;
		}
		snprintf(v[k].node, sizeof(v[k].node), "%s", node);
		v[k].lo = lo;
		v[k].hi = hi;
		k++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return cw_sqlite_errno(rc);
	}
	*out = v;
	*n = k;
	return 0;
}

static int render_xid(sqlite3 *db, struct strbuf *sb)
{
	struct xid_count *c = NULL;
	struct id_range *r = NULL;
	sqlite3_stmt *st = NULL;
	int nr = 0, nc = 0, rc;

	if ((rc = xid_ranges(db, &r, &nr)))
		return rc;
	c = calloc(MAX_XID_SERIES, sizeof(*c));
	if (!c) {
		free(r);
		return -ENOMEM;
	}
	rc = sqlite3_prepare_v2(db,
				/* kernel-side rows: kevents, not the whole events view */
				"SELECT device, arg0 FROM kevents WHERE id BETWEEN ?1 AND ?2 AND node = ?3"
				" AND source = 'gpu' AND op = 'xid'",
				-1, &st, NULL);
	for (int i = 0; i < nr && rc == SQLITE_OK; i++) {
		sqlite3_bind_int64(st, 1, r[i].lo);
		sqlite3_bind_int64(st, 2, r[i].hi);
		sqlite3_bind_text(st, 3, r[i].node, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t dev = opt(st, 0), code = sqlite3_column_int64(st, 1);
			int j;

			/* The parser accepts 1..CW_XID_CODE_MAX only; anything else
			 * is not a code and must not become a label. */
			if (code <= 0 || code > CW_XID_CODE_MAX)
				continue;
			for (j = 0; j < nc; j++)
				if (c[j].device == dev && c[j].code == code && !strcmp(c[j].node, r[i].node))
					break;
			if (j == nc) {
				if (nc == MAX_XID_SERIES)
					continue;
				snprintf(c[nc].node, sizeof(c[nc].node), "%s", r[i].node);
				c[nc].device = dev;
				c[nc].code = code;
				nc++;
			}
			c[j].n++;
		}
		sqlite3_reset(st);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(st);
	free(r);
	if (rc != SQLITE_OK) {
		free(c);
		return cw_sqlite_errno(rc);
	}
	qsort(c, (size_t)nc, sizeof(*c), by_labels);
	family(sb, "causeway_gpu_xid_errors_total", "counter",
	       "Xid faults the driver reported (kernel log or NVML), by device and Xid code, with the "
	       "catalogue's severity; gpu is empty when the fault named no device.");
	for (int j = 0; j < nc; j++) {
		const struct cw_xid_info *info = cw_xid_lookup((uint32_t)c[j].code);

		strbuf_adds(sb, "causeway_gpu_xid_errors_total{node=\"");
		cw_prom_escape_label(sb, c[j].node);
		strbuf_adds(sb, "\",gpu=\"");
		if (c[j].device >= 0)
			strbuf_addf(sb, "%lld", (long long)c[j].device);
		strbuf_addf(sb, "\",code=\"%lld\",xid_severity=\"", (long long)c[j].code);
		cw_prom_escape_label(sb, info ? info->severity : "");
		strbuf_addf(sb, "\"} %llu\n", (unsigned long long)c[j].n);
	}
	free(c);
	return 0;
}

int cw_metrics_render_gpu(sqlite3 *db, struct strbuf *sb)
{
	struct dev *v;
	int n, rc;

	if ((rc = load_devices(db, &v, &n)))
		return rc;
	if (n) {
		render_devices(sb, v, n);
		rc = render_processes(db, sb, v, n);
	}
	free(v);
	if (!rc)
		rc = render_xid(db, sb);
	return rc ? rc : sb->overflow ? -ENOMEM : 0;
}
