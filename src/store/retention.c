/* Retention by tiers (retention.h, docs/schema.md "Retention"). Calls are
 * in time order by id (a batch at a time), so "older than the window" is
 * an id bound found by bisection, and every tier deletes by id ranges. */
#include "store/retention.h"

#include <errno.h>
#include <stdio.h>

#include "store/requests.h"

static int64_t pragma_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

int64_t cw_store_used_bytes(struct cw_store *st)
{
	int64_t pages = pragma_int(st->db, "PRAGMA page_count");
	int64_t free_pages = pragma_int(st->db, "PRAGMA freelist_count");
	int64_t size = pragma_int(st->db, "PRAGMA page_size");

	if (pages < 0 || free_pages < 0 || size < 0)
		return -EIO;
	return (pages - free_pages) * size;
}

/* Runs sql with up to three integer parameters; returns the rows it
 * changed or -errno. */
static int64_t run3(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t c)
{
	sqlite3_stmt *s;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	if (sqlite3_bind_parameter_count(s) >= 1)
		sqlite3_bind_int64(s, 1, a);
	if (sqlite3_bind_parameter_count(s) >= 2)
		sqlite3_bind_int64(s, 2, b);
	if (sqlite3_bind_parameter_count(s) >= 3)
		sqlite3_bind_int64(s, 3, c);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	return sqlite3_changes64(db);
}

/* The first row at or after id: its id and monotonic start (sql selects
 * both for ?1). Returns 1, 0 when none, -errno. */
static int row_at(sqlite3 *db, const char *sql, int64_t id, int64_t *got, int64_t *mono)
{
	sqlite3_stmt *s;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*got = sqlite3_column_int64(s, 0);
		*mono = sqlite3_column_int64(s, 1);
		sqlite3_finalize(s);
		return 1;
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static const char call_at_sql[] = "SELECT c.id, t.mono_base + c.t FROM calls c JOIN call_threads t ON t.id = c.th"
				  " WHERE c.id >= ?1 ORDER BY c.id LIMIT 1";

/* The first id whose row starts at or after mono (INT64_MAX: none), by
 * bisection over ids (rows are in time order by id). */
static int first_at(sqlite3 *db, const char *sql, const char *max_sql, int64_t mono, int64_t *out)
{
	int64_t lo, best, hi, r, m;
	int got;

	*out = INT64_MAX;
	got = row_at(db, sql, 0, &lo, &m);
	if (got <= 0)
		return got;
	if (m >= mono) {
		*out = lo;
		return 0;
	}
	best = pragma_int(db, max_sql);
	if (best < 0)
		return -EIO;
	got = row_at(db, sql, best, &best, &m);
	if (got < 0)
		return got;
	if (m < mono)
		return 0;
	/* The row at lo is older than mono, the row at best is not, and no
	 * row in [hi, best) exists or is; the answer lies in (lo, best]. */
	hi = best;
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;

		got = row_at(db, sql, mid, &r, &m);
		if (got < 0)
			return got;
		if (!got || r >= hi) {
			hi = mid;
		} else if (m < mono) {
			lo = r;
		} else {
			best = r;
			hi = mid;
		}
	}
	*out = best;
	return 0;
}

/* A call that explains nothing once old: not anomalous, not failing, not
 * NCCL, not its process's first call of its op. */
#define ORDINARY                                                                                                    \
	"c.anomalous = 0 AND (c.ret IS NULL OR c.ret = 0) AND c.op NOT IN (SELECT id FROM temp.retention_nccl)"     \
	" AND c.id NOT IN (SELECT id FROM temp.retention_first)"

/* Up to want ordinary calls with ids below bound, oldest first. */
static int64_t delete_ordinary(sqlite3 *db, int64_t bound, int64_t want)
{
	return run3(db,
		    "DELETE FROM calls WHERE id IN (SELECT c.id FROM calls c WHERE c.id < ?1 AND " ORDINARY
		    " ORDER BY c.id LIMIT ?2)",
		    bound, want, 0);
}

/* The per-connection tables retention reads: the NCCL ops, and each
 * process's first call of each op, scanned from where the last run of this
 * connection stopped (the ids only grow). */
static int refresh_keep_tables(sqlite3 *db)
{
	int err = cw_exec(db, "CREATE TEMP TABLE IF NOT EXISTS retention_nccl (id INTEGER PRIMARY KEY);"
			      "CREATE TEMP TABLE IF NOT EXISTS retention_first (node TEXT, pid INTEGER, op INTEGER,"
			      " id INTEGER, PRIMARY KEY (node, pid, op));"
			      "CREATE INDEX IF NOT EXISTS temp.retention_first_id ON retention_first (id);"
			      "CREATE TEMP TABLE IF NOT EXISTS retention_scan (id INTEGER);"
			      "CREATE TEMP TABLE IF NOT EXISTS retention_spans (tid INTEGER, s INTEGER, e INTEGER);"
			      "CREATE INDEX IF NOT EXISTS temp.retention_spans_tid ON retention_spans (tid, s);"
			      "CREATE INDEX IF NOT EXISTS temp.retention_spans_s ON retention_spans (s);"
			      "DELETE FROM temp.retention_nccl;"
			      "INSERT INTO temp.retention_nccl SELECT id FROM call_ops WHERE source = 'nccl';"
			      "INSERT INTO temp.retention_scan SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM temp.retention_scan);"
			      "INSERT OR IGNORE INTO temp.retention_first SELECT t.node, t.pid, c.op, min(c.id)"
			      " FROM calls c JOIN call_threads t ON t.id = c.th"
			      " WHERE c.id > (SELECT id FROM temp.retention_scan) GROUP BY t.node, t.pid, c.op;"
			      "UPDATE temp.retention_scan SET id = coalesce((SELECT max(id) FROM calls), id);");

	return err;
}

/* Rows to delete so that used bytes fall to target, at bpr bytes a row. */
static int64_t rows_for(int64_t used, int64_t target, double bpr)
{
	if (used <= target)
		return 0;
	return (int64_t)((double)(used - target) / bpr) + 1;
}

/* After n rows went: the bytes in use now, and the bytes a row freed
 * (kept when too few rows went to free a page). */
static int learn(struct cw_store *st, int64_t *used, int64_t n, double *bpr)
{
	int64_t now = cw_store_used_bytes(st);

	if (now < 0)
		return (int)now;
	if (n > 0 && now < *used)
		*bpr = (double)(*used - now) / (double)n;
	*used = now;
	return 0;
}

/* Off-CPU intervals and I/O, memory and network events that ended before
 * the window and overlap no kept call older than it (same thread for an
 * interval, any thread for a kernel event: a disk or a page allocator is
 * shared). Rows the engine cites alone stay: anomalous kernel events,
 * oom kills, process events. */
static int64_t prune_evidence(sqlite3 *db, int64_t win_id, int64_t win_mono, int64_t *kevents)
{
	int64_t a, b, maxdur;
	int err;

	err = cw_exec(db, "DELETE FROM temp.retention_spans");
	if (err)
		return err;
	a = run3(db,
		 "INSERT INTO temp.retention_spans SELECT t.tid, t.mono_base + c.t, t.mono_base + c.t + c.dur"
		 " FROM calls c JOIN call_threads t ON t.id = c.th WHERE c.id < ?1 AND NOT (" ORDINARY ")",
		 win_id, 0, 0);
	if (a < 0)
		return a;
	maxdur = pragma_int(db, "SELECT coalesce(max(e - s), 0) FROM temp.retention_spans");
	if (maxdur < 0)
		return -EIO;
	a = run3(db,
		 "DELETE FROM offcpu WHERE end_mono_ns < ?1 AND NOT EXISTS (SELECT 1 FROM temp.retention_spans k"
		 " WHERE k.tid = offcpu.tid AND k.s < offcpu.end_mono_ns AND k.s >= offcpu.start_mono_ns - ?2"
		 " AND k.e > offcpu.start_mono_ns)",
		 win_mono, maxdur, 0);
	if (a < 0)
		return a;
	b = run3(db,
		 "DELETE FROM kevents WHERE mono_ns + duration_ns < ?1 AND source IN ('io', 'mem', 'net')"
		 " AND op != 'oom_kill' AND anomalous = 0 AND NOT EXISTS (SELECT 1 FROM temp.retention_spans k"
		 " WHERE k.s < kevents.mono_ns + kevents.duration_ns AND k.s >= kevents.mono_ns - ?2"
		 " AND k.e > kevents.mono_ns)",
		 win_mono, maxdur, 0);
	if (b < 0)
		return b;
	*kevents = b;
	return a + b;
}

/* ---- inference requests (store/requests.h) ---- */

/* A request retention keeps longest: failed, or slow (over 2 s, or over
 * 3x its route's mean duration in request_totals; a route the node's cap
 * counted as "other" is judged by the mean of "other"). */
#define REQ_SLOW                                                                                            \
	"(r.duration_ns > 2000000000 OR r.duration_ns > 3 * coalesce("                                      \
	"(SELECT m.mean FROM temp.req_route_mean m WHERE m.node = r.node AND m.route = coalesce(r.path, '"  \
	CW_REQ_UNKNOWN "')),"                                                                               \
	" (SELECT m.mean FROM temp.req_route_mean m WHERE m.node = r.node AND m.route = '" CW_REQ_OTHER_ROUTE \
	"'), 2000000000))"
#define REQ_KEPT "(" CW_REQ_FAILED_SQL("r") " OR " REQ_SLOW ")"
_Static_assert(CW_REQ_SLOW_NS == 2000000000LL, "REQ_SLOW's bound");

/* The mean duration of each (node, route) over every request counted,
 * one row per route: what the slow rule compares with. A file before v11
 * has no requests: 0 rows then, and the callers find no table either. */
static int refresh_request_means(sqlite3 *db)
{
	if (pragma_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'requests'") <= 0)
		return 1;
	return cw_exec(db, "CREATE TEMP TABLE IF NOT EXISTS req_route_mean (node TEXT, route TEXT, mean INTEGER,"
			   " PRIMARY KEY (node, route));"
			   "DELETE FROM temp.req_route_mean;"
			   "INSERT INTO temp.req_route_mean SELECT node, route, sum(duration_sum_ns) / sum(count)"
			   " FROM request_totals GROUP BY node, route HAVING sum(count) > 0;");
}

/* Tier 2: requests neither slow nor failed that ended over the recent
 * window before the newest request. */
static int64_t prune_request_evidence(sqlite3 *db, int64_t window_ns)
{
	int64_t newest = pragma_int(db, "SELECT mono_ns FROM requests ORDER BY id DESC LIMIT 1");

	if (newest < 0)
		return 0;
	return run3(db,
		    "DELETE FROM requests WHERE id IN (SELECT r.id FROM requests r WHERE r.mono_ns < ?1"
		    " AND r.mono_ns + r.duration_ns < ?1 AND NOT " REQ_KEPT ")",
		    newest - window_ns, 0, 0);
}

/* After every event: requests oldest first, ordinary ones, then engine
 * samples older than the oldest request left, then slow and failed ones;
 * until used is at most target. */
static int prune_requests(struct cw_store *st, int64_t *used, int64_t target, struct cw_retention_counts *c)
{
	static const char *const del[2] = {
		"DELETE FROM requests WHERE id IN (SELECT r.id FROM requests r WHERE NOT " REQ_KEPT
		" ORDER BY r.id LIMIT ?1)",
		"DELETE FROM requests WHERE id IN (SELECT id FROM requests ORDER BY id LIMIT ?1)",
	};
	int64_t rows = pragma_int(st->db, "SELECT count(*) FROM requests"), got, want, e;
	double bpr;
	int err;

	if (rows <= 0)
		return rows < 0 ? (int)rows : 0;
	bpr = (double)*used / (double)rows;
	for (int k = 0; k < 2; k++) {
		for (int pass = 0; pass < 16 && *used > target; pass++) {
			want = rows_for(*used, target, bpr);
			got = run3(st->db, del[k], want, 0, 0);
			if (got < 0)
				return (int)got;
			c->requests += got;
			if (k)
				c->requests_kept += got;
			if ((err = learn(st, used, got, &bpr)))
				return err;
			if (got < want)
				break;
		}
		if (k == 0 && *used > target) {
			e = run3(st->db,
				 "DELETE FROM engine_metrics WHERE wall_ns < coalesce((SELECT wall_ns FROM requests"
				 " ORDER BY id LIMIT 1), (SELECT max(wall_ns) FROM engine_metrics))",
				 0, 0, 0);
			if (e < 0)
				return (int)e;
			c->engine_metrics += e;
			if ((err = learn(st, used, 0, &bpr)))
				return err;
		}
	}
	return 0;
}

/* The oldest n calls or kernel events of one flag, over both tables
 * shared by their row counts (both are in id order). */
static int64_t delete_oldest(sqlite3 *db, const char *table, int64_t n, int anomalous)
{
	char sql[160];

	if (n <= 0)
		return 0;
	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE id IN (SELECT id FROM %s WHERE anomalous = ?1 ORDER BY id LIMIT ?2)",
		 table, table);
	return run3(db, sql, anomalous, n, 0);
}

static int64_t delete_both(sqlite3 *db, int64_t n, int anomalous, int64_t ncalls, int64_t nk)
{
	int64_t k = ncalls + nk > 0 ? (int64_t)((double)n * (double)nk / (double)(ncalls + nk) + 0.5) : 0;
	int64_t a, b, c;

	a = delete_oldest(db, "kevents", k, anomalous);
	if (a < 0)
		return a;
	b = delete_oldest(db, "calls", n - a, anomalous);
	if (b < 0)
		return b;
	if (a + b < n) {
		c = delete_oldest(db, "kevents", n - a - b, anomalous);
		if (c < 0)
			return c;
		b += c;
	}
	return a + b;
}

/* Intervals and snapshots older than the oldest kept event explain
 * nothing any more; so do thread rows whose 2^31 ns stretch ended before
 * it (a call row lies within its thread row's stretch). */
static int64_t prune_context(sqlite3 *db)
{
	static const char *const dels[] = {
		"DELETE FROM offcpu WHERE end_mono_ns < (SELECT mono FROM temp.retention_floor)",
		"DELETE FROM snapshots WHERE mono_ns < (SELECT mono FROM temp.retention_floor)",
		"DELETE FROM gpu_samples WHERE mono_ns < (SELECT mono FROM temp.retention_floor)",
		"DELETE FROM gpu_processes WHERE mono_ns < (SELECT mono FROM temp.retention_floor)",
	};
	int64_t n = 0, r;
	int err;

	err = cw_exec(db, "CREATE TEMP TABLE IF NOT EXISTS retention_floor (mono INTEGER);"
			  "DELETE FROM temp.retention_floor;"
			  /* no row left: nothing older is needed either */
			  "INSERT INTO temp.retention_floor SELECT coalesce(min(m), 9223372036854775807) FROM ("
			  " SELECT (SELECT t.mono_base + c.t FROM calls c JOIN call_threads t ON t.id = c.th"
			  " ORDER BY c.id LIMIT 1) AS m"
			  " UNION ALL SELECT (SELECT mono_ns FROM kevents ORDER BY id LIMIT 1)) WHERE m IS NOT NULL;");
	if (err)
		return err;
	for (size_t i = 0; i < sizeof(dels) / sizeof(dels[0]); i++) {
		r = run3(db, dels[i], 0, 0, 0);
		if (r < 0)
			return r;
		n += r;
	}
	r = run3(db, "DELETE FROM call_threads WHERE mono_base + 2 * 2147483648 < (SELECT mono FROM temp.retention_floor)",
		 0, 0, 0);
	return r < 0 ? r : n;
}

/* Deletes chains rows, oldest first, until used is at most target or
 * none is left; the bytes a row takes are learnt from the first deletes. */
static int64_t prune_chains(struct cw_store *st, int64_t *used, int64_t target)
{
	int64_t rows = pragma_int(st->db, "SELECT count(*) FROM chains"), n = 0, got, want;
	double bpr;
	int err;

	if (rows <= 0)
		return rows < 0 ? rows : 0;
	/* first guess: the whole file's bytes per chain row (too high), then
	 * what each delete freed */
	bpr = (double)*used / (double)rows;
	for (int pass = 0; pass < 16 && *used > target; pass++) {
		want = rows_for(*used, target, bpr);
		got = run3(st->db, "DELETE FROM chains WHERE id IN (SELECT id FROM chains ORDER BY id LIMIT ?1)", want, 0, 0);
		if (got <= 0)
			return got < 0 ? got : n;
		n += got;
		if ((err = learn(st, used, got, &bpr)))
			return err;
	}
	return n;
}

static void add_counts(struct cw_retention_counts *out, const struct cw_retention_counts *c)
{
	out->ordinary += c->ordinary, out->evidence += c->evidence, out->recent += c->recent;
	out->kept += c->kept, out->context += c->context, out->events += c->events;
	out->chains += c->chains;
	out->requests += c->requests, out->requests_kept += c->requests_kept;
	out->engine_metrics += c->engine_metrics;
	if (c->through_wall_ns > out->through_wall_ns)
		out->through_wall_ns = c->through_wall_ns;
}

/* Between the steps of a pass: what was deleted is committed and
 * checkpointed, so the WAL holds one step's pages at a time and not the
 * whole pass's (under a 2 MiB cap, a pass of several steps was a WAL of
 * 576 KiB; docs/trace.md "Size cap"). */
static int step_done(sqlite3 *db, const struct cw_retention_counts *c, struct cw_retention_counts *committed)
{
	int err = cw_exec(db, "COMMIT");

	if (err)
		return err;
	*committed = *c;
	sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	return cw_exec(db, "BEGIN IMMEDIATE");
}

int cw_retention_enforce_tiers(struct cw_store *st, int64_t cap, int64_t window_ns, struct cw_retention_counts *out)
{
	struct cw_retention_counts cc = { 0 }, *c = &cc, committed = { 0 };
	int64_t used, target = cap / 10 * 9, ncalls, nk, newest, id, n, kev = 0, win_id = 0, win_mono = 0;
	sqlite3 *db = st->db;
	int err, r, evidence_done = 0, no_requests;
	double bpr;

	used = cw_store_used_bytes(st);
	if (used < 0)
		return (int)used;
	if (used <= cap)
		return 0;
	err = cw_exec(db, "BEGIN IMMEDIATE");
	if (err)
		return err;
	err = refresh_keep_tables(db);
	if (err)
		goto fail;
	no_requests = refresh_request_means(db);
	if (no_requests < 0) {
		err = no_requests;
		goto fail;
	}
	ncalls = pragma_int(db, "SELECT count(*) FROM calls");
	nk = pragma_int(db, "SELECT count(*) FROM kevents");
	if (ncalls < 0 || nk < 0) {
		err = -EIO;
		goto fail;
	}
	/* The window ends at the newest call (kernel events of an idle
	 * workload count as history, not as its present). */
	id = pragma_int(db, "SELECT max(id) FROM calls");
	if (id > 0) {
		r = row_at(db, call_at_sql, id, &id, &newest);
		if (r < 0) {
			err = r;
			goto fail;
		}
		win_mono = newest - window_ns;
		err = first_at(db, call_at_sql, "SELECT max(id) FROM calls", win_mono, &win_id);
		if (err)
			goto fail;
	}
	/* Each tier runs only once the ones before it have nothing left to
	 * give. Rows to delete come from the bytes per row, first guessed as
	 * the whole file's (too high: the schema's pages and the aggregates
	 * do not shrink), then learnt from what each delete freed, so a
	 * second pass (rarely a third) meets the target. */
	bpr = ncalls + nk > 0 ? (double)used / (double)(ncalls + nk) : 1.0;
	for (int pass = 0; pass < 16 && used > target; pass++) {
		int64_t before = c->events + c->evidence + c->requests, want;
		int dry;

		/* 1. ordinary calls older than the window, oldest first */
		want = rows_for(used, target, bpr);
		if ((n = delete_ordinary(db, win_id, want)) < 0)
			goto fail_n;
		c->ordinary += n, c->events += n, ncalls -= n;
		dry = n < want;
		if ((err = learn(st, &used, n, &bpr)) || (err = step_done(db, c, &committed)))
			goto fail;
		/* 2. evidence older than the window that no kept call needs,
		 * and requests older than theirs that are neither slow nor
		 * failed */
		if (dry && !evidence_done && used > target) {
			int64_t q = 0;

			n = 0;
			if (win_id > 0 && (n = prune_evidence(db, win_id, win_mono, &kev)) < 0)
				goto fail_n;
			if (!no_requests && (q = prune_request_evidence(db, window_ns)) < 0) {
				n = q;
				goto fail_n;
			}
			evidence_done = 1;
			c->evidence += n, c->events += kev, nk -= kev;
			c->requests += q;
			if ((err = learn(st, &used, n + q, &bpr)) || (err = step_done(db, c, &committed)))
				goto fail;
		}
		/* 3. ordinary calls of the window: it shrinks, oldest first */
		want = rows_for(used, target, bpr);
		if (dry && want > 0) {
			if ((n = delete_ordinary(db, INT64_MAX, want)) < 0)
				goto fail_n;
			c->recent += n, c->events += n, ncalls -= n;
			dry = n < want;
			if ((err = learn(st, &used, n, &bpr)) || (err = step_done(db, c, &committed)))
				goto fail;
		}
		/* 4. what is left, oldest first: kernel events and kept calls */
		want = rows_for(used, target, bpr);
		if (dry && want > 0) {
			int64_t got = delete_both(db, want, 0, ncalls, nk);

			if (got < 0) {
				n = got;
				goto fail_n;
			}
			if (got < want) {
				n = delete_both(db, want - got, 1, ncalls, nk);
				if (n < 0)
					goto fail_n;
				got += n;
			}
			c->kept += got, c->events += got;
			ncalls = pragma_int(db, "SELECT count(*) FROM calls");
			nk = pragma_int(db, "SELECT count(*) FROM kevents");
			if ((err = learn(st, &used, got, &bpr)) || (err = step_done(db, c, &committed)))
				goto fail;
		}
		if (c->events + c->evidence + c->requests == before)
			break;
	}
	n = prune_context(db);
	if (n < 0)
		goto fail_n;
	c->context += n;
	if ((err = learn(st, &used, 0, &bpr)))
		goto fail;
	/* 5b. requests, the slow and failed ones last, after every event */
	if (used > target && !no_requests) {
		if ((err = prune_requests(st, &used, target, c)) || (err = step_done(db, c, &committed)))
			goto fail;
	}
	/* 6. chains, oldest first: the history of diagnoses outlives every
	 * raw row and goes only when nothing else is left. */
	if (used > target) {
		n = prune_chains(st, &used, target);
		if (n < 0)
			goto fail_n;
		c->chains += n;
	}
	if (c->ordinary + c->recent > 0) {
		c->through_wall_ns = pragma_int(db, "SELECT t.mono_base + c.t + t.wall_off FROM calls c JOIN call_threads t"
						    " ON t.id = c.th WHERE " ORDINARY " ORDER BY c.id LIMIT 1");
		if (c->through_wall_ns < 0)
			c->through_wall_ns = pragma_int(db, "SELECT t.mono_base + c.t + t.wall_off FROM calls c"
							    " JOIN call_threads t ON t.id = c.th ORDER BY c.id DESC LIMIT 1");
		if (c->through_wall_ns < 0)
			c->through_wall_ns = 0;
	}
	err = cw_exec(db, "COMMIT");
	if (err)
		goto fail;
	add_counts(out, c);
	return 0;
fail_n:
	err = (int)n;
fail:
	if (!sqlite3_get_autocommit(db))
		cw_exec(db, "ROLLBACK");
	/* The steps committed before the failure stay pruned: counted. */
	add_counts(out, &committed);
	return err;
}

int cw_retention_enforce(struct cw_store *st, int64_t cap, int64_t *pruned_events)
{
	struct cw_retention_counts c = { 0 };
	int err = cw_retention_enforce_tiers(st, cap, (int64_t)CW_RETENTION_WINDOW_NS, &c);

	*pruned_events = err ? 0 : c.events;
	return err;
}
