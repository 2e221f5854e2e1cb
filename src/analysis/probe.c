/* The per-call probe: for each slow call of an op, how much of its
 * [start, start+duration) its own thread spent off-CPU preempted or
 * blocked, whether that blocked time overlapped block I/O in flight or a
 * memory-pressure second, and who held the CPU while it was preempted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/vec.h"
#include "util/search.h"

/* Rows of block I/O loaded per window; beyond this the I/O overlap is
 * computed on the first rows only and a warning is raised by the caller. */
#define CW_IO_MAX_ROWS 2000000
/* Memory pressure thresholds (docs/rules.md). */
#define CW_SWAP_GROWTH_MIN (1LL << 20)     /* bytes per second */
#define CW_PAGE_STORM_MIN 50000            /* pages per second */
#define CW_PAGE_STORM_FACTOR 4.0           /* x the window's median */
#define CW_MEM_PCT_PRESSURE 95.0

uint64_t cw_sys_wall(const struct cw_sysctx *sys, uint64_t mono)
{
	return (uint64_t)((int64_t)mono + sys->mono_to_wall);
}

static int load_offset(sqlite3 *db, const char *node, int64_t *off)
{
	static const char *const sqls[] = {
		"SELECT mono_to_wall_ns FROM sessions WHERE node = ?1 ORDER BY id DESC LIMIT 1",
		"SELECT wall_ns - mono_ns FROM events WHERE node = ?1 LIMIT 1",
	};
	*off = 0;
	for (size_t i = 0; i < 2; i++) {
		sqlite3_stmt *st = NULL;
		int rc = sqlite3_prepare_v2(db, sqls[i], -1, &st, NULL);
		if (rc != SQLITE_OK)
			return cw_sqlite_errno(rc);
		sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*off = sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
			return 0;
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return cw_sqlite_errno(rc);
	}
	return 0;
}

static int load_snaps(sqlite3 *db, struct cw_sysctx *sys, uint64_t from, uint64_t to)
{
	static const char sql[] =
		"SELECT mono_ns, wall_ns, cpu_pct, mem_pct, load1, io_busy_pct, swap_used_bytes,"
		" page_alloc_per_s, io_bytes_per_s, ncpu FROM snapshots"
		" WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3 ORDER BY mono_ns";
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, sys->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)(from > 2 * NSEC_PER_SEC ? from - 2 * NSEC_PER_SEC : 0));
	sqlite3_bind_int64(st, 3, (int64_t)(to + 2 * NSEC_PER_SEC));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cw_vec_reserve(&sys->snaps, &cap, sys->nsnaps + 1, sizeof(*sys->snaps), 256) < 0) {
			sqlite3_finalize(st);
			return -ENOMEM;
		}
		sys->snaps[sys->nsnaps++] = (struct cw_snap){
			.mono_ns = (uint64_t)sqlite3_column_int64(st, 0),
			.wall_ns = (uint64_t)sqlite3_column_int64(st, 1),
			.cpu_pct = sqlite3_column_double(st, 2),
			.mem_pct = sqlite3_column_double(st, 3),
			.load1 = sqlite3_column_double(st, 4),
			.io_busy_pct = sqlite3_column_double(st, 5),
			.swap_used = sqlite3_column_int64(st, 6),
			.page_alloc_per_s = sqlite3_column_int64(st, 7),
			.io_bytes_per_s = sqlite3_column_int64(st, 8),
			.ncpu = sqlite3_column_int(st, 9),
		};
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* A snapshot reports rates over the second before it, so a pressured
 * snapshot marks [previous snapshot, this snapshot). */
static int build_pressure(struct cw_sysctx *sys)
{
	double *pa;
	double med;
	size_t n = sys->nsnaps;

	if (n == 0)
		return 0;
	pa = malloc(n * sizeof(*pa));
	sys->pressure = malloc(n * sizeof(*sys->pressure));
	if (!pa || !sys->pressure) {
		free(pa);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		pa[i] = (double)sys->snaps[i].page_alloc_per_s;
	med = cw_median(pa, n);
	free(pa);
	for (size_t i = 0; i < n; i++) {
		const struct cw_snap *s = &sys->snaps[i];
		int64_t growth = i ? s->swap_used - sys->snaps[i - 1].swap_used : 0;
		int storm = s->page_alloc_per_s >= CW_PAGE_STORM_MIN &&
			    (double)s->page_alloc_per_s >= CW_PAGE_STORM_FACTOR * med;
		if (growth >= CW_SWAP_GROWTH_MIN || storm || s->mem_pct > CW_MEM_PCT_PRESSURE) {
			uint64_t start = i ? sys->snaps[i - 1].mono_ns
					   : (s->mono_ns > NSEC_PER_SEC ? s->mono_ns - NSEC_PER_SEC : 0);
			sys->pressure[sys->npressure++] = (struct cw_interval){start, s->mono_ns};
		}
	}
	sys->npressure = cw_intervals_union(sys->pressure, sys->npressure);
	return 0;
}

struct io_req {
	struct cw_interval iv;
	int64_t pid;
};

static int io_req_cmp(const void *a, const void *b)
{
	const struct io_req *x = a, *y = b;
	return x->iv.start < y->iv.start ? -1 : x->iv.start > y->iv.start;
}

static int load_io(sqlite3 *db, struct cw_sysctx *sys, uint64_t from, uint64_t to)
{
	static const char sql[] =
		"SELECT mono_ns, duration_ns, pid FROM kevents"
		" WHERE id BETWEEN ?5 AND ?6 AND source = 'io' AND op IN ('block_read', 'block_write', 'block_other')"
		" AND node = ?1 AND wall_ns BETWEEN ?2 AND ?3 LIMIT ?4";
	sqlite3_stmt *st = NULL;
	struct io_req *v = NULL;
	size_t n = 0, cap = 0;
	/* SQLite seeks the partial index events_io (node, wall_ns) for these
	 * rows; a v1 file opened read-only lacks it, and the rowid range of
	 * the window then bounds the scan.
	 * A request issued up to 10 s before the window can still be in flight. */
	uint64_t lo_wall = from > 10 * NSEC_PER_SEC ? from - 10 * NSEC_PER_SEC : 0;
	int64_t lo_id, hi_id;
	int rc;

	if ((rc = cw_events_id_at(db, lo_wall, &lo_id)) < 0 ||
	    (rc = cw_events_id_at(db, to + 10 * NSEC_PER_SEC, &hi_id)) < 0)
		return rc;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, sys->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)lo_wall);
	sqlite3_bind_int64(st, 3, (int64_t)to);
	sqlite3_bind_int64(st, 4, CW_IO_MAX_ROWS);
	sqlite3_bind_int64(st, 5, lo_id);
	sqlite3_bind_int64(st, 6, hi_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cw_vec_reserve(&v, &cap, n + 1, sizeof(*v), 1024) < 0) {
			free(v);
			sqlite3_finalize(st);
			return -ENOMEM;
		}
		uint64_t s = (uint64_t)sqlite3_column_int64(st, 0);
		v[n].iv = (struct cw_interval){s, s + (uint64_t)sqlite3_column_int64(st, 1)};
		v[n].pid = sqlite3_column_int64(st, 2);
		n++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return cw_sqlite_errno(rc);
	}
	sys->io_requests = n;
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), io_req_cmp);
	sys->io = malloc(n * sizeof(*sys->io));
	sys->io_raw = malloc(n * sizeof(*sys->io_raw));
	sys->io_pid = malloc(n * sizeof(*sys->io_pid));
	if (!sys->io || !sys->io_raw || !sys->io_pid) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		sys->io[i] = sys->io_raw[i] = v[i].iv;
		sys->io_pid[i] = v[i].pid;
	}
	sys->nio_raw = n;
	sys->nio = cw_intervals_union(sys->io, n);
	free(v);
	return 0;
}

int cw_aggregates_have(sqlite3 *db, const char *node, const char *source, int64_t from_sec, int64_t to_sec,
		       int *out)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db,
				    "SELECT 1 FROM aggregates WHERE (?1 IS NULL OR node = ?1) AND source = ?2"
				    " AND second BETWEEN ?3 AND ?4 LIMIT 1",
				    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	if (node)
		sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, from_sec);
	sqlite3_bind_int64(st, 4, to_sec);
	rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_sysctx_load(sqlite3 *db, const char *node, uint64_t from_wall, uint64_t to_wall,
		   struct cw_sysctx *sys)
{
	int ret;

	memset(sys, 0, sizeof(*sys));
	snprintf(sys->node, sizeof(sys->node), "%s", node);
	sys->db = db;
	sys->from_wall = from_wall;
	sys->to_wall = to_wall;
	if ((ret = load_offset(db, node, &sys->mono_to_wall)) < 0 ||
	    (ret = load_snaps(db, sys, from_wall, to_wall)) < 0 || (ret = build_pressure(sys)) < 0 ||
	    /* Block I/O is loaded only when the aggregates count some; requests
	     * issued up to 10 s before the window can still be in flight. */
	    (ret = cw_aggregates_have(db, node, "io", (int64_t)(from_wall / NSEC_PER_SEC) - 10,
				      (int64_t)(to_wall / NSEC_PER_SEC), &sys->has_io)) < 0) {
		cw_sysctx_free(sys);
		return ret;
	}
	return 0;
}

/* Loads the node's block I/O of the window once (a seek on the partial
 * index events_io); called only when a slow call was blocked. */
int cw_sysctx_need_io(struct cw_sysctx *sys)
{
	if (sys->io_loaded)
		return 0;
	sys->io_loaded = 1;
	if (!sys->has_io)
		return 0;
	return load_io(sys->db, sys, sys->from_wall, sys->to_wall);
}

static int retx_mono_cmp(const void *a, const void *b)
{
	const struct cw_retx *x = a, *y = b;
	return x->mono_ns < y->mono_ns ? -1 : x->mono_ns > y->mono_ns;
}

/* At most this many retransmits are read per window: a link that drops
 * more has named itself long before. */
#define CW_RETX_MAX_ROWS 200000

static int retx_push(struct cw_sysctx *sys, size_t *cap, uint64_t wall, uint64_t mono, int64_t pid, const char *tuple)
{
	struct cw_retx *r;
	int t;

	if (cw_vec_reserve(&sys->retx, cap, sys->nretx + 1, sizeof(*sys->retx), 256) < 0)
		return -ENOMEM;
	for (t = 0; t < sys->nretx_tuples && strcmp(sys->retx_tuples[t], tuple); t++)
		;
	if (t == sys->nretx_tuples) {
		if (t < CW_RETX_TUPLES)
			snprintf(sys->retx_tuples[sys->nretx_tuples++], sizeof(sys->retx_tuples[0]), "%s", tuple);
		else
			t = -1;
	}
	r = &sys->retx[sys->nretx++];
	r->wall_ns = wall;
	r->mono_ns = mono;
	r->pid = pid;
	r->tuple = t;
	return 0;
}

int cw_sysctx_need_retx(struct cw_sysctx *sys)
{
	static const char sql[] =
		"SELECT wall_ns, mono_ns, pid, detail FROM kevents WHERE op = 'tcp_retransmit' AND node = ?1"
		" AND wall_ns BETWEEN ?2 AND ?3 ORDER BY wall_ns LIMIT ?4";
	size_t cap = 0;
	int has, rc, ret = 0;

	if (sys->retx_loaded)
		return 0;
	sys->retx_loaded = 1;
	sys->retx_tuples = calloc(CW_RETX_TUPLES, sizeof(*sys->retx_tuples));
	if (!sys->retx_tuples)
		return -ENOMEM;
	if ((has = cw_events_has_index(sys->db, "events_retx")) < 0)
		return has;
	if (has) {
		/* A seek on the covering index events_retx (schema v3). */
		sqlite3_stmt *st = NULL;
		rc = sqlite3_prepare_v2(sys->db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			return cw_sqlite_errno(rc);
		sqlite3_bind_text(st, 1, sys->node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)sys->from_wall);
		sqlite3_bind_int64(st, 3, (int64_t)sys->to_wall);
		sqlite3_bind_int64(st, 4, CW_RETX_MAX_ROWS);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *d = (const char *)sqlite3_column_text(st, 3);
			if ((ret = retx_push(sys, &cap, (uint64_t)sqlite3_column_int64(st, 0),
					     (uint64_t)sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
					     d ? d : "")) < 0)
				break;
		}
		sqlite3_finalize(st);
		if (!ret && rc != SQLITE_DONE)
			ret = cw_sqlite_errno(rc);
	} else {
		/* A file without it: through the aggregates' seconds. */
		struct cw_rare_event *v = NULL;
		int n = cw_rare_events_load(sys->db, sys->node, "net", "tcp_retransmit", sys->from_wall, sys->to_wall,
					    CW_RETX_MAX_ROWS, &v);
		if (n < 0)
			return n;
		for (int i = 0; i < n && !ret; i++)
			ret = retx_push(sys, &cap, v[i].wall_ns, v[i].mono_ns, v[i].pid, v[i].detail);
		free(v);
	}
	if (!ret && sys->nretx > 1)
		qsort(sys->retx, sys->nretx, sizeof(*sys->retx), retx_mono_cmp);
	return ret;
}

void cw_sysctx_free(struct cw_sysctx *sys)
{
	free(sys->snaps);
	free(sys->pressure);
	free(sys->io);
	free(sys->io_raw);
	free(sys->io_pid);
	free(sys->retx);
	free(sys->retx_tuples);
	memset(sys, 0, sizeof(*sys));
}

const struct cw_snap *cw_sysctx_snap_at(const struct cw_sysctx *sys, uint64_t mono)
{
	const struct cw_snap *best = NULL;
	uint64_t bestd = UINT64_MAX;

	/* The snapshot at or just after mono covers the second around it. */
	for (size_t i = 0; i < sys->nsnaps; i++) {
		uint64_t m = sys->snaps[i].mono_ns;
		uint64_t d = m >= mono ? m - mono : mono - m + NSEC_PER_SEC / 2;
		if (d < bestd) {
			bestd = d;
			best = &sys->snaps[i];
		}
	}
	return best;
}

static int starts_before(const void *rows, size_t i, const void *key)
{
	return ((const struct cw_interval *)rows)[i].start < *(const uint64_t *)key;
}

uint64_t cw_sysctx_io_of_pid(const struct cw_sysctx *sys, int64_t pid, uint64_t s, uint64_t e)
{
	struct cw_interval tmp[64];
	size_t n = 0;
	/* Requests starting more than 10 s before s are not considered. */
	uint64_t from = s > 10 * NSEC_PER_SEC ? s - 10 * NSEC_PER_SEC : 0;
	size_t lo = cw_partition_point(sys->io_raw, sys->nio_raw, &from, starts_before);

	for (size_t i = lo; i < sys->nio_raw && sys->io_raw[i].start < e && n < 64; i++)
		if (sys->io_pid[i] == pid && sys->io_raw[i].end > s)
			tmp[n++] = sys->io_raw[i];
	n = cw_intervals_union(tmp, n);
	return cw_intervals_cover(tmp, n, s, e);
}

static void culprit_in_call(struct cw_culprit_acc *a, const struct cw_slowcall *c, uint64_t ns)
{
	if (a->call != c) {
		a->call = c;
		a->call_ns = 0;
	}
	a->call_ns += ns;
}

static int add_culprit(struct cw_rule_ctx *ctx, size_t *cap, const struct cw_slowcall *c, const char *comm,
		       int64_t pid, uint64_t cg, int cpu, uint64_t ns)
{
	for (size_t i = 0; i < ctx->nculprits; i++) {
		struct cw_culprit_acc *a = &ctx->culprits[i];
		if (a->pid == pid && a->cgroup_id == cg && a->cpu == cpu && !strcmp(a->comm, comm)) {
			a->ns += ns;
			culprit_in_call(a, c, ns);
			return 0;
		}
	}
	if (cw_vec_reserve(&ctx->culprits, cap, ctx->nculprits + 1, sizeof(*ctx->culprits), 16) < 0)
		return -ENOMEM;
	struct cw_culprit_acc *a = &ctx->culprits[ctx->nculprits++];
	memset(a, 0, sizeof(*a));
	snprintf(a->comm, sizeof(a->comm), "%s", comm);
	a->pid = pid;
	a->cgroup_id = cg;
	a->cpu = cpu;
	a->ns = ns;
	culprit_in_call(a, c, ns);
	return 0;
}

/* The culprits that preempted call c: c is the one each preempted
 * longest when none before it was preempted longer by it (the first of
 * equals, as calls are measured in time order). off > dur: c's off-CPU
 * time was clamped to its duration, and each culprit's share with it. */
static void culprits_worst_call(struct cw_rule_ctx *ctx, const struct cw_slowcall *c, uint64_t off)
{
	for (size_t i = 0; i < ctx->nculprits; i++) {
		struct cw_culprit_acc *a = &ctx->culprits[i];
		uint64_t ns = a->call_ns;

		if (a->call != c)
			continue;
		if (off > c->dur_ns)
			ns = ns * c->dur_ns / off;
		if (ns > a->worst_ns) {
			a->worst_ns = ns;
			a->worst_wall_ns = c->wall_ns;
		}
		a->call = NULL;
		a->call_ns = 0;
	}
}

static int culprit_cmp(const void *a, const void *b)
{
	const struct cw_culprit_acc *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int call_cmp(const void *a, const void *b)
{
	const struct cw_slowcall *x = a, *y = b;
	return x->mono_ns < y->mono_ns ? -1 : x->mono_ns > y->mono_ns;
}

static int measure_offcpu(struct cw_rule_ctx *ctx, sqlite3_stmt *st, struct cw_slowcall *c,
			  size_t *ccap)
{
	uint64_t s = c->mono_ns, e = c->mono_ns + c->dur_ns;
	int rc, ret = 0;

	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, c->tid);
	sqlite3_bind_int64(st, 2, (int64_t)s);
	sqlite3_bind_int64(st, 3, (int64_t)e);
	sqlite3_bind_text(st, 4, ctx->st->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, c->pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t a = (uint64_t)sqlite3_column_int64(st, 0);
		uint64_t b = (uint64_t)sqlite3_column_int64(st, 1);
		const char *reason = (const char *)sqlite3_column_text(st, 2);
		uint64_t len = cw_overlap(a, b, s, e);

		ctx->offcpu_seen = 1;
		if (!len || !reason)
			continue;
		if (a < s)
			a = s;
		if (b > e)
			b = e;
		if (!strcmp(reason, "preempted")) {
			const char *bc = (const char *)sqlite3_column_text(st, 5);
			c->preempted_ns += len;
			ret = add_culprit(ctx, ccap, c, bc ? bc : "?", sqlite3_column_int64(st, 4),
					  (uint64_t)sqlite3_column_int64(st, 6),
					  sqlite3_column_type(st, 3) == SQLITE_NULL
						  ? -1
						  : sqlite3_column_int(st, 3),
					  len);
			if (ret < 0)
				break;
		} else {
			if ((ret = cw_sysctx_need_io(ctx->sys)) < 0)
				break;
			/* Memory pressure takes precedence over I/O: swapping
			 * under pressure issues its own block I/O. */
			uint64_t mem = cw_intervals_cover(ctx->sys->pressure, ctx->sys->npressure, a, b);
			uint64_t io = cw_intervals_cover(ctx->sys->io, ctx->sys->nio, a, b);
			c->blocked_ns += len;
			c->blocked_mem_ns += mem;
			c->blocked_io_ns += io < len - mem ? io : len - mem;
		}
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = cw_sqlite_errno(rc);
	/* Intervals of one thread never overlap, but clamp anyway so a
	 * malformed store cannot produce shares above 1. */
	culprits_worst_call(ctx, c, c->preempted_ns + c->blocked_ns);
	if (c->preempted_ns + c->blocked_ns > c->dur_ns) {
		uint64_t off = c->preempted_ns + c->blocked_ns;
		c->preempted_ns = c->preempted_ns * c->dur_ns / off;
		c->blocked_ns = c->dur_ns - c->preempted_ns;
		if (c->blocked_io_ns > c->blocked_ns)
			c->blocked_io_ns = c->blocked_ns;
		if (c->blocked_mem_ns > c->blocked_ns)
			c->blocked_mem_ns = c->blocked_ns;
	}
	return ret;
}

/* Whether op had calls (any process's, in the per-second aggregates,
 * which retention keeps) in a second before sec: a PK seek. */
static int op_began_before(sqlite3 *db, const struct cw_opstat *op, int64_t sec, int *out)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db,
				    "SELECT 1 FROM aggregates WHERE node = ?1 AND source = ?2 AND op = ?3 AND second < ?4"
				    " LIMIT 1",
				    -1, &st, NULL);

	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, op->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, op->source, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, op->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, sec);
	rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_probe_op(struct cw_rule_ctx *ctx, int64_t pid)
{
	/* The intervals that overlap a call [?2, ?3): those starting inside
	 * it, and the thread's last one starting before it (intervals of one
	 * thread never overlap, so no earlier one can reach the call). Both
	 * are index seeks on (tid, start_mono_ns), whatever the store's size
	 * or the thread's off-CPU rate. */
	static const char off_sql[] =
		"SELECT start_mono_ns, end_mono_ns, reason, cpu, by_pid, by_comm, by_cgroup_id"
		" FROM offcpu WHERE tid = ?1 AND start_mono_ns >= ?2 AND start_mono_ns < ?3"
		" AND node = ?4 AND pid = ?5"
		" UNION ALL SELECT * FROM (SELECT start_mono_ns, end_mono_ns, reason, cpu, by_pid, by_comm,"
		" by_cgroup_id FROM offcpu WHERE tid = ?1 AND start_mono_ns < ?2 AND node = ?4 AND pid = ?5"
		" ORDER BY start_mono_ns DESC LIMIT 1)";
	const struct cw_opstat *op = ctx->st;
	/* The op's anomalous calls, then (the writer flags a call anomalous
	 * only once its op has 32 samples) its first calls by rowid. */
	const char *slow_sql, *first_sql;
	sqlite3_stmt *st = NULL, *off = NULL, *first = NULL;
	size_t cap = 0, ccap = 0;
	uint64_t first_calls;
	int began = 0;
	int64_t lo_id = 1, hi_id = 0;
	int rc, ret = 0, pass;

	if ((ret = cw_store_op_read_sql(ctx->db, op->op, CW_OP_READ_SLOWEST, &slow_sql)) < 0 ||
	    (ret = cw_store_op_read_sql(ctx->db, op->op, CW_OP_READ_FIRST, &first_sql)) < 0)
		return ret;
	rc = sqlite3_prepare_v2(ctx->db, slow_sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(ctx->db, off_sql, -1, &off, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(ctx->db, first_sql, -1, &first, NULL);
	if (rc != SQLITE_OK) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	if (op->nsecs) {
		/* The op's early stretch: its first second up to the second that
		 * holds its first 5 % of calls, with 2 s of slack for rows written
		 * out of order. */
		int64_t end = op->secs[0].second;
		for (size_t i = 0; i < op->nsecs && cw_opstat_calls_through(op, op->secs[i].second) <= op->count / 20; i++)
			end = op->secs[i].second;
		/* ... but never more than the first 3 s, which bounds the scan
		 * on large stores (start-up costs land in the first seconds). */
		if (end > op->secs[0].second + 2)
			end = op->secs[0].second + 2;
		uint64_t a = (uint64_t)op->secs[0].second * NSEC_PER_SEC;
		if ((ret = cw_events_id_at(ctx->db, a > 2 * NSEC_PER_SEC ? a - 2 * NSEC_PER_SEC : 0, &lo_id)) < 0 ||
		    (ret = cw_events_id_at(ctx->db, (uint64_t)(end + 3) * NSEC_PER_SEC, &hi_id)) < 0)
			goto out;
	}
	for (pass = 0; pass < 2; pass++) {
		sqlite3_stmt *q = pass == 0 ? st : first;
		sqlite3_bind_text(q, 1, op->op, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 2, (int64_t)ctx->threshold_ns);
		sqlite3_bind_text(q, 3, op->node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 4, (int64_t)ctx->window_from_ns);
		sqlite3_bind_int64(q, 5, (int64_t)ctx->window_to_ns);
		sqlite3_bind_int64(q, 6, pid);
		sqlite3_bind_int64(q, 7, pass == 0 ? CW_SLOW_MAX : 64);
		if (pass == 1) {
			sqlite3_bind_int64(q, 8, lo_id);
			sqlite3_bind_int64(q, 9, hi_id);
		}
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (cw_vec_reserve(&ctx->calls, &cap, ctx->ncalls + 1, sizeof(*ctx->calls), 64) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		struct cw_slowcall *c = &ctx->calls[ctx->ncalls++];
		const char *comm = (const char *)sqlite3_column_text(q, 5);
		memset(c, 0, sizeof(*c));
		c->mono_ns = (uint64_t)sqlite3_column_int64(q, 0);
		c->dur_ns = (uint64_t)sqlite3_column_int64(q, 1);
		c->wall_ns = (uint64_t)sqlite3_column_int64(q, 2);
		c->pid = sqlite3_column_int64(q, 3);
		c->tid = sqlite3_column_int64(q, 4);
		snprintf(c->comm, sizeof(c->comm), "%s", comm ? comm : "");
		c->device = sqlite3_column_type(q, 6) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 6);
		c->py_stack_id = sqlite3_column_int64(q, 7);
		c->id = sqlite3_column_int64(q, 8);
		c->stack_id = sqlite3_column_int64(q, 9);
		c->unfinished = sqlite3_column_int(q, 10);
	}
	if (rc != SQLITE_DONE) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	}
	if (ctx->ncalls == 0)
		goto out;
	qsort(ctx->calls, ctx->ncalls, sizeof(*ctx->calls), call_cmp);

	/* Cold start: a call is among the op's first calls when it falls in
	 * the op's first active second or in the first 5 % of its calls, and
	 * the window holds the op's start: a window that begins after the op
	 * made calls (explain over an incident's own seconds) has a first
	 * second that is only the window's. */
	if ((ret = op_began_before(ctx->db, op, (int64_t)(ctx->window_from_ns / NSEC_PER_SEC), &began)) < 0)
		goto out;
	first_calls = op->count / 20;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		struct cw_slowcall *c = &ctx->calls[i];
		int64_t sec = (int64_t)(c->wall_ns / NSEC_PER_SEC);

		if ((ret = measure_offcpu(ctx, off, c, &ccap)) < 0)
			goto out;
		c->io_same_pid_ns = cw_sysctx_io_of_pid(ctx->sys, c->pid, c->mono_ns, c->mono_ns + c->dur_ns);
		/* A call that never returned is no start-up cost: it is what a
		 * hang or a stall leaves open, however early it began. */
		c->early = !began && !c->unfinished && ((op->nsecs && sec <= op->secs[0].second) ||
					      cw_opstat_calls_through(op, sec) <= first_calls);
		ctx->slow_time_ns += c->dur_ns;
		ctx->preempted_ns += c->preempted_ns;
		ctx->blocked_ns += c->blocked_ns;
		ctx->blocked_io_ns += c->blocked_io_ns;
		ctx->blocked_mem_ns += c->blocked_mem_ns;
		ctx->io_same_pid_ns += c->io_same_pid_ns;
	}
	if (ctx->nculprits > 1)
		qsort(ctx->culprits, ctx->nculprits, sizeof(*ctx->culprits), culprit_cmp);
	ret = (int)ctx->ncalls;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(off);
	sqlite3_finalize(first);
	return ret;
}

void cw_probe_free(struct cw_rule_ctx *ctx)
{
	free(ctx->calls);
	free(ctx->culprits);
	ctx->calls = NULL;
	ctx->culprits = NULL;
	ctx->ncalls = ctx->nculprits = 0;
	/* The totals too: a context probed again (an op's incident seconds
	 * after its window) would add its calls' times to the window's. */
	ctx->slow_time_ns = 0;
	ctx->offcpu_seen = 0;
	ctx->preempted_ns = ctx->blocked_ns = ctx->blocked_io_ns = ctx->blocked_mem_ns = 0;
	ctx->foreign_gpu_ns = ctx->io_same_pid_ns = 0;
}

int cw_op_is_sync(const char *op)
{
	return strstr(op, "Synchronize") != NULL || !strcmp(op, "cudaStreamWaitEvent");
}

int cw_op_is_memcpy(const char *op)
{
	return !strncmp(op, "cudaMemcpy", 10) || !strncmp(op, "cuMemcpy", 8);
}

int cw_op_is_alloc(const char *op)
{
	static const char *const names[] = {"cudaMalloc", "cudaMallocAsync", "cudaMallocManaged",
					    "cudaFree", "cudaFreeAsync", "cuMemAlloc",
					    "cuMemAllocAsync", "cuMemAllocManaged", "cuMemFree",
					    "cuMemCreate", "cuMemMap"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(op, names[i]))
			return 1;
	return 0;
}

int cw_op_is_launch(const char *op)
{
	return !strncmp(op, "cudaLaunchKernel", 16) || !strncmp(op, "cuLaunchKernel", 14) ||
	       !strcmp(op, "cudaGraphLaunch") || !strcmp(op, "cuGraphLaunch");
}

/* Page-locked host memory: the pages are allocated, zeroed and pinned by
 * the call itself, so it is where host page-allocation pressure lands. */
int cw_op_is_host_alloc(const char *op)
{
	static const char *const names[] = {"cudaHostAlloc", "cudaMallocHost", "cudaHostRegister",
					    "cuMemHostAlloc", "cuMemAllocHost", "cuMemHostRegister"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(op, names[i]))
			return 1;
	return 0;
}

int cw_op_is_graph_launch(const char *op)
{
	return !strcmp(op, "cudaGraphLaunch") || !strcmp(op, "cuGraphLaunch");
}

/* Ops that (re)build a graph: capture, instantiation and update. A
 * steady-state graph replays without any of them. */
int cw_op_is_graph_build(const char *op)
{
	static const char *const names[] = {"cudaStreamEndCapture", "cudaGraphInstantiate",
					    "cudaGraphInstantiateWithFlags", "cuGraphInstantiate",
					    "cuGraphInstantiateWithFlags", "cudaGraphExecUpdate",
					    "cuGraphExecUpdate", "cuStreamEndCapture"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(op, names[i]))
			return 1;
	return 0;
}
