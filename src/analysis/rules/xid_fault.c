/* xid_fault: the driver reported an Xid on the node in the window (kernel
 * log or NVML, stored as events of source 'gpu', op 'xid'). The chain
 * names the most severe one (the latest among equals): the code and its
 * catalogue meaning, the PCI address, the affected process (the log
 * line's pid, else the process with the most CUDA calls on the device in
 * the minute before) and that process's last CUDA calls. Any Xid fires;
 * severity follows the catalogue (critical: high, error: medium, else
 * low). explained_share is 1: the fault is the finding. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "analysis/gpuctx.h"
#include "gpu/xid.h"
#include "store/store.h"
#include "util/timeutil.h"

#define LOOKBACK_NS (60ULL * NSEC_PER_SEC)

struct xid_row {
	int64_t id, pid;
	uint64_t wall, mono;
	uint32_t code;
	int device;
	char comm[32], pci[32], from[8], text[160];
};

/* The process with the most GPU calls on the device (or on an unknown
 * device: calls made before any cudaSetDevice carry none) in the minute
 * before the fault. */
static int64_t busiest(sqlite3 *db, const char *node, int device, uint64_t wall, char *comm, size_t clen)
{
	sqlite3_stmt *st = NULL;
	int64_t lo, hi, pid = 0;

	if (cw_events_id_at(db, wall > LOOKBACK_NS ? wall - LOOKBACK_NS : 0, &lo) || cw_events_id_at(db, wall + 1, &hi))
		return 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT pid, comm, count(*) AS n FROM events WHERE id BETWEEN ?1 AND ?2 AND node = ?3"
			       " AND source IN ('cuda','driver','nccl','graph') AND (?4 < 0 OR device = ?4 OR device IS NULL)"
			       " GROUP BY pid ORDER BY n DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, device);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *cm = (const char *)sqlite3_column_text(st, 1);
		pid = sqlite3_column_int64(st, 0);
		snprintf(comm, clen, "%s", cm ? cm : "");
	}
	sqlite3_finalize(st);
	return pid;
}

/* The process's last (up to 3) GPU calls before wall, newest first, as
 * timeline entries; returns the newest op in last_op. */
static void last_calls(sqlite3 *db, const char *node, int64_t pid, uint64_t wall, struct cw_chain *c, char *last_op,
		       size_t olen)
{
	sqlite3_stmt *st = NULL;
	int64_t lo, hi;
	int n = 0;

	last_op[0] = '\0';
	if (cw_events_id_at(db, wall > LOOKBACK_NS ? wall - LOOKBACK_NS : 0, &lo) || cw_events_id_at(db, wall + 1, &hi))
		return;
	if (sqlite3_prepare_v2(db,
			       "SELECT op, wall_ns, duration_ns, ret, tid FROM events WHERE id BETWEEN ?1 AND ?2"
			       " AND node = ?3 AND pid = ?4 AND source IN ('cuda','driver','nccl','graph')"
			       " AND wall_ns <= ?5 ORDER BY id DESC LIMIT 3",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, pid);
	sqlite3_bind_int64(st, 5, (int64_t)wall);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *op = (const char *)sqlite3_column_text(st, 0);
		char d[32];
		cw_format_duration((uint64_t)sqlite3_column_int64(st, 2), d, sizeof(d));
		if (!n++) {
			snprintf(last_op, olen, "%s", op ? op : "");
			if (!c->tid)
				c->tid = sqlite3_column_int64(st, 4);
		}
		cw_chain_add_timeline(c, CW_LAYER_CUDA, (uint64_t)sqlite3_column_int64(st, 1), "pid %lld called %s (%s%s)",
				      (long long)pid, op ? op : "?", d,
				      sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_int64(st, 3) ? ", failed" : "");
	}
	sqlite3_finalize(st);
}

static void parse_detail(const char *s, struct xid_row *x)
{
	json_t *d = s ? json_loads(s, 0, NULL) : NULL;
	const char *v;

	if (!d)
		return;
	if ((v = json_string_value(json_object_get(d, "pci"))))
		snprintf(x->pci, sizeof(x->pci), "%s", v);
	if ((v = json_string_value(json_object_get(d, "from"))))
		snprintf(x->from, sizeof(x->from), "%s", v);
	if ((v = json_string_value(json_object_get(d, "text"))))
		snprintf(x->text, sizeof(x->text), "%s", v);
	json_decref(d);
}

int cw_rule_xid_fault(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	sqlite3 *db = ctx->db;
	const struct cw_sysctx *sys = ctx->sys;
	uint64_t from_wall = ctx->window_from_ns, to_wall = ctx->window_to_ns;
	sqlite3_stmt *st = NULL;
	struct xid_row best = {0}, x;
	int64_t lo, hi, n = 0, distinct_codes = 0;
	uint32_t codes[16];
	const struct cw_xid_info *info;
	char last_op[48], dname[160] = "";
	int rc;

	if (cw_events_id_at(db, from_wall, &lo) || cw_events_id_at(db, to_wall + 1, &hi))
		return 0;
	/* Faults are rare: one pass over the window's 'gpu' rows. */
	rc = sqlite3_prepare_v2(db,
				"SELECT id, pid, comm, wall_ns, mono_ns, arg0, device, detail FROM kevents"
				" WHERE id BETWEEN ?1 AND ?2 AND node = ?3 AND source = 'gpu' AND op = 'xid'"
				" AND (?4 = 0 OR pid = ?4 OR pid = 0) ORDER BY id",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, sys->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, ctx->opts->pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *cm = (const char *)sqlite3_column_text(st, 2);
		int64_t code = sqlite3_column_int64(st, 5);
		int k;

		if (code <= 0 || code > CW_XID_CODE_MAX)
			continue;
		memset(&x, 0, sizeof(x));
		x.id = sqlite3_column_int64(st, 0);
		x.pid = sqlite3_column_int64(st, 1);
		snprintf(x.comm, sizeof(x.comm), "%s", cm ? cm : "");
		x.wall = (uint64_t)sqlite3_column_int64(st, 3);
		x.mono = (uint64_t)sqlite3_column_int64(st, 4);
		x.code = (uint32_t)code;
		x.device = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 6);
		parse_detail((const char *)sqlite3_column_text(st, 7), &x);
		n++;
		for (k = 0; k < distinct_codes && codes[k] != x.code; k++)
			;
		if (k == distinct_codes && k < 16)
			codes[distinct_codes++] = x.code;
		if (!best.code || cw_xid_severity_rank(x.code) >= cw_xid_severity_rank(best.code))
			best = x;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	if (!n)
		return 0;
	info = cw_xid_lookup(best.code);
	memset(c, 0, sizeof(*c));
	c->kind = CW_KIND_XID_FAULT;
	snprintf(c->op, sizeof(c->op), "xid");
	snprintf(c->source, sizeof(c->source), "gpu");
	snprintf(c->node, sizeof(c->node), "%s", sys->node);
	c->count = (uint64_t)n;
	c->slow_count = (uint64_t)n;
	c->explained_share = 1;
	c->rank = -1;
	c->culprit.cpu = -1;
	c->pid = best.pid;
	c->tid = 0;
	snprintf(c->comm, sizeof(c->comm), "%s", best.comm);
	if (c->pid <= 0)
		c->pid = busiest(db, sys->node, best.device, best.wall, c->comm, sizeof(c->comm));
	if (sys->gpu && best.device >= 0) {
		const struct cw_gdev *d = cw_gpuctx_dev(sys->gpu, best.device);
		if (d)
			snprintf(dname, sizeof(dname), " (GPU %d, %s)", best.device, d->name);
	}
	cw_chain_summary(c, "Xid %u on %s%s: %s (%s, %s)", best.code,
		 best.pci[0] ? best.pci : "an unknown device", dname, info->name, info->severity, info->cause);
	if (c->pid > 0) {
		size_t len = strlen(c->summary);
		snprintf(c->summary + len, sizeof(c->summary) - len, "; process %lld (%s)%s", (long long)c->pid,
			 c->comm[0] ? c->comm : "?", best.pid > 0 ? "" : " was the busiest on the device");
		last_calls(db, sys->node, c->pid, best.wall, c, last_op, sizeof(last_op));
		len = strlen(c->summary);
		if (last_op[0])
			snprintf(c->summary + len, sizeof(c->summary) - len, ", last CUDA call %s", last_op);
	}
	if (n > 1) {
		size_t len = strlen(c->summary);
		snprintf(c->summary + len, sizeof(c->summary) - len, "; %lld Xid event(s) in the window", (long long)n);
	}
	cw_chain_add_timeline(c, CW_LAYER_DRIVER, best.wall, "NVRM: Xid %u (%s) from %s: %s", best.code,
			      best.pci[0] ? best.pci : "?", best.from[0] ? best.from : "?", best.text);
	cw_chain_add_advice(c, "%s", info->action);
	cw_chain_add_fix(c, "journalctl -k | grep -i xid  # the driver's own lines around the fault");
	if (!strcmp(info->cause, "memory"))
		cw_chain_add_fix(c, "nvidia-smi -q -d ECC,ROW_REMAPPER%s%s", best.pci[0] ? " -i " : "", best.pci);
	else if (!strcmp(info->cause, "application"))
		cw_chain_add_advice(c, "run the job under compute-sanitizer --tool memcheck to find the faulting kernel");
	else
		cw_chain_add_fix(c, "dcgmi diag -r 3  # full diagnostic before the GPU takes jobs again");
	cw_chain_add_evidence(c, "xid", best.code, 1);
	cw_chain_add_evidence(c, "xid_events", (double)n, 1);
	cw_chain_add_evidence(c, "xid_codes", (double)distinct_codes, 1);
	cw_chain_add_evidence(c, "severity_rank", cw_xid_severity_rank(best.code), 1);
	if (best.device >= 0)
		cw_chain_add_evidence(c, "device", best.device, 1);
	if (best.pid > 0)
		cw_chain_add_evidence(c, "fault_pid", (double)best.pid, 1);
	return 1;
}
