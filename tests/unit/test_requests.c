/* Inference requests in the store (schema v11): cw_writer_request's row
 * and its count in request_totals (counts equal rows, buckets at their
 * edges, the route cap, hostile wire text, both or neither), retention
 * keeping slow and failed requests longest and request_totals always,
 * `query` reading the tables, and the /metrics exposition. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/families.h"
#include "store/requests.h"
#include "store/retention.h"
#include "store/ro_query.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

static char path[64];

static int64_t q1(struct cw_store *st, const char *sql)
{
	return store_q1(st->db, sql);
}

static struct cw_store *fresh(void)
{
	struct cw_store *st;
	char err[256];

	remove_store_files(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	return st;
}

static struct cw_request_row req(const char *method, const char *p, int status, uint64_t dur, int64_t ttft)
{
	static uint64_t t = 1000 * MS, conn;
	struct cw_request_row r = {
		.pid = 100,
		.tid = 101,
		.resp_tid = 102,
		.cgroup_id = 7,
		.comm = "llama-server",
		.conn_id = ++conn,
		.port = 8080,
		.start_mono_ns = t,
		.wall_ns = t + 5000,
		.duration_ns = dur,
		.ttft_ns = ttft,
		.method = method,
		.path = p,
		.status = status,
		.bytes_in = 120,
		.bytes_out = 4000,
		.streamed = ttft >= 0,
		.body_events = ttft >= 0 ? 3 : 0,
		.itl_max_ns = ttft >= 0 ? 20 * (int64_t)MS : -1,
		.itl_mean_ns = ttft >= 0 ? 10 * (int64_t)MS : -1,
		.end = "complete",
	};

	t += 10 * MS;
	return r;
}

static struct cw_writer *writer(struct cw_store *st, int threaded)
{
	struct cw_writer_opts wo = { .node = "n1", .batch_rows = 1000, .threaded = threaded };
	struct cw_writer *w;

	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	return w;
}

/* Every request is one row and one count, in either writer mode and over
 * several batches; rows keep what the wire said. */
static void counts_equal_rows(int threaded)
{
	struct cw_store *st = fresh();
	struct cw_writer *w = writer(st, threaded);
	struct cw_writer_stats ws;
	const char *paths[] = { "/v1/completions", "/v1/chat/completions", "/health" };
	int i, n = 2500;

	for (i = 0; i < n; i++) {
		struct cw_request_row r = req(i % 7 ? "POST" : "GET", paths[i % 3], i % 50 ? 200 : 503,
					      (uint64_t)(i % 40) * 7 * MS,
					      i % 2 ? (int64_t)(i % 30) * (int64_t)MS : -1);

		assert_int_equal(cw_writer_request(w, &r), 0);
	}
	cw_writer_get_stats(w, &ws);
	assert_int_equal(ws.requests, n);
	assert_int_equal(ws.requests_other_route, 0);
	assert_int_equal(cw_writer_free(w), 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests"), n);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals"), n);
	assert_int_equal(q1(st, "SELECT sum(ttft_count) FROM request_totals"), n / 2);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals WHERE status = 503"), n / 50);
	assert_int_equal(q1(st, "SELECT sum(duration_sum_ns) FROM request_totals"),
			 q1(st, "SELECT sum(duration_ns) FROM requests"));
	assert_int_equal(q1(st, "SELECT sum(ttft_sum_ns) FROM request_totals"),
			 q1(st, "SELECT sum(ttft_ns) FROM requests"));
	/* every bucket equals the rows at or under its bound */
	for (i = 0; i < CW_REQ_BUCKETS; i++) {
		char a[256], b[256];

		snprintf(a, sizeof(a), "SELECT sum(dur_le_%s) FROM request_totals", cw_req_bucket_col[i]);
		snprintf(b, sizeof(b), "SELECT count(*) FROM requests WHERE duration_ns <= %llu",
			 (unsigned long long)cw_req_bucket_ns[i]);
		assert_int_equal(q1(st, a), q1(st, b));
		snprintf(a, sizeof(a), "SELECT sum(ttft_le_%s) FROM request_totals", cw_req_bucket_col[i]);
		snprintf(b, sizeof(b), "SELECT count(*) FROM requests WHERE ttft_ns <= %llu",
			 (unsigned long long)cw_req_bucket_ns[i]);
		assert_int_equal(q1(st, a), q1(st, b));
	}
	/* the row as written */
	assert_int_equal(q1(st,
			    "SELECT count(*) FROM requests WHERE id = 2 AND node = 'n1' AND pid = 100 AND tid = 101"
			    " AND resp_tid = 102 AND cgroup_id = 7 AND comm = 'llama-server' AND port = 8080"
			    " AND method = 'POST' AND path = '/v1/chat/completions' AND status = 200 AND bytes_in = 120"
			    " AND bytes_out = 4000 AND ttft_ns = 1000000 AND duration_ns = 7000000 AND streamed = 1"
			    " AND body_events = 3 AND itl_max_ns = 20000000 AND itl_mean_ns = 10000000"
			    " AND end_reason = 'complete' AND wall_ns = mono_ns + 5000"),
			 1);
	/* no body: NULL TTFT and inter-token figures */
	assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE id = 1 AND ttft_ns IS NULL AND itl_max_ns IS NULL"
				" AND itl_mean_ns IS NULL AND streamed = 0"),
			 1);
	assert_int_equal(
		q1(st,
		   "SELECT count(*) FROM request_totals WHERE method = 'GET' AND route = '/health' AND status = 200"),
		1);
	cw_store_close(st);
}

static void test_counts_equal_rows(void **state)
{
	(void)state;
	counts_equal_rows(0);
}

static void test_counts_equal_rows_threaded(void **state)
{
	(void)state;
	counts_equal_rows(1);
}

/* A request lasting exactly a bound is in that bucket (le), one ns more
 * is in the next; TTFT buckets the same; -1 TTFT counts nothing. */
static void test_bucket_edges(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w = writer(st, 0);
	char sql[256];
	int i;

	(void)state;
	for (i = 0; i < CW_REQ_BUCKETS; i++) {
		char p[32];
		struct cw_request_row r;

		snprintf(p, sizeof(p), "/edge/%d", i);
		r = req("POST", p, 200, cw_req_bucket_ns[i], (int64_t)cw_req_bucket_ns[i]);
		assert_int_equal(cw_writer_request(w, &r), 0);
		snprintf(p, sizeof(p), "/over/%d", i);
		r = req("POST", p, 200, cw_req_bucket_ns[i] + 1, (int64_t)cw_req_bucket_ns[i] + 1);
		assert_int_equal(cw_writer_request(w, &r), 0);
	}
	{
		struct cw_request_row r = req("GET", "/nobody", 204, 0, -1);

		assert_int_equal(cw_writer_request(w, &r), 0);
	}
	assert_int_equal(cw_writer_free(w), 0);
	for (i = 0; i < CW_REQ_BUCKETS; i++) {
		for (int j = 0; j < CW_REQ_BUCKETS; j++) {
			snprintf(sql, sizeof(sql),
				 "SELECT dur_le_%s * 10 + ttft_le_%s FROM request_totals WHERE route = '/edge/%d'",
				 cw_req_bucket_col[j], cw_req_bucket_col[j], i);
			assert_int_equal(q1(st, sql), j >= i ? 11 : 0);
			snprintf(sql, sizeof(sql),
				 "SELECT dur_le_%s * 10 + ttft_le_%s FROM request_totals WHERE route = '/over/%d'",
				 cw_req_bucket_col[j], cw_req_bucket_col[j], i);
			assert_int_equal(q1(st, sql), j > i ? 11 : 0);
		}
	}
	assert_int_equal(q1(st, "SELECT count * 100 + ttft_count * 10 + dur_le_10ms FROM request_totals"
				" WHERE route = '/nobody'"),
			 101);
	assert_int_equal(q1(st, "SELECT ttft_le_10s + ttft_sum_ns FROM request_totals WHERE route = '/nobody'"), 0);
	cw_store_close(st);
}

/* The first 32 (method, path) of a node keep their path; later ones are
 * counted as "other", known ones still under their own, also by the next
 * writer on the file; the rows keep every path. */
static void test_route_cap(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w = writer(st, 0);
	struct cw_writer_stats ws;
	struct cw_request_row r;
	char p[64];
	int i;

	(void)state;
	for (i = 0; i < 40; i++) {
		snprintf(p, sizeof(p), "/scan/%d", i);
		r = req("GET", p, 404, 1 * MS, -1);
		assert_int_equal(cw_writer_request(w, &r), 0);
	}
	/* a known route after the cap: its own */
	r = req("GET", "/scan/3", 200, 1 * MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	/* the same path by another method is another route: other */
	r = req("POST", "/scan/3", 200, 1 * MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	cw_writer_get_stats(w, &ws);
	assert_int_equal(ws.requests, 42);
	assert_int_equal(ws.requests_other_route, 9);
	assert_int_equal(cw_writer_free(w), 0);
	assert_int_equal(q1(st,
			    "SELECT count(DISTINCT method || ' ' || route) FROM request_totals WHERE route != 'other'"),
			 CW_REQ_MAX_ROUTES);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals WHERE route = 'other'"), 9);
	assert_int_equal(q1(st, "SELECT count(*) FROM request_totals WHERE route = '/scan/39'"), 0);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals WHERE route = '/scan/3'"), 2);
	assert_int_equal(q1(st, "SELECT count(DISTINCT path) FROM requests"), 40);
	/* the next writer reads the routes back */
	w = writer(st, 0);
	r = req("GET", "/scan/31", 200, 1 * MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req("GET", "/scan/32", 200, 1 * MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	cw_writer_get_stats(w, &ws);
	assert_int_equal(ws.requests_other_route, 1);
	assert_int_equal(cw_writer_free(w), 0);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals WHERE route = '/scan/31'"), 2);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals WHERE route = 'other'"), 10);
	cw_store_close(st);
}

/* Wire text stored bounded and printable; the query string never kept;
 * a method no RFC names counted as OTHER; NULLs where nothing was seen. */
static void test_hostile_strings(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w = writer(st, 0);
	struct cw_request_row r;
	char *longp = malloc(10001);
	struct strbuf sb;

	(void)state;
	memset(longp, 'a', 10000);
	longp[0] = '/';
	longp[10000] = 0;
	r = req("POST", longp, 200, 1 * MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req("G\x01T\n\xff", "/x\r\n\"q\\\x1b[31m\xc3\xa9?token=secret", 200, 1 * MS, -1);
	r.comm = "evil\ncomm-that-is-far-too-long";
	r.end = "closed\x7f";
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "?only=query", 0, 1 * MS, -1);
	r.end = NULL;
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req(NULL, NULL, 0, 1 * MS, -1);
	r.comm = NULL;
	assert_int_equal(cw_writer_request(w, &r), 0);
	assert_int_equal(cw_writer_free(w), 0);
	free(longp);

	assert_int_equal(q1(st, "SELECT max(length(path)) FROM requests"), CW_REQ_PATH_MAX - 1);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE method = 'G?T?"
				"?' AND path = '/x?"
				"?\"q\\?[31m?"
				"?'"
				" AND comm = 'evil?comm-that-' AND end_reason = 'closed?'"),
			 1);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE instr(path, 'secret') OR instr(path, 'token')"),
			 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE path = '/' AND length(method) = 15"
				" AND end_reason = 'unknown' AND status IS NULL"),
			 1);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE method IS NULL AND path IS NULL AND comm IS NULL"),
			 1);
	/* nothing outside printable ASCII anywhere */
	assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE"
				" path GLOB '*[^ -~]*' OR method GLOB '*[^ -~]*' OR comm GLOB '*[^ -~]*'"
				" OR end_reason GLOB '*[^ -~]*'"),
			 0);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals WHERE method = 'OTHER'"), 2);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals WHERE method = 'unknown' AND route = 'unknown'"
				" AND status = 0"),
			 1);
	/* the exposition escapes what it labels */
	strbuf_init(&sb, 1 << 20);
	assert_int_equal(cw_metrics_render_inference(st->db, &sb), 0);
	assert_non_null(strstr(strbuf_str(&sb), "route=\"/x?"
						"?\\\"q\\\\?[31m?"
						"?\""));
	assert_null(strstr(strbuf_str(&sb), "secret"));
	strbuf_release(&sb);
	cw_store_close(st);
}

/* A count that cannot be stored takes its row with it (and the reverse):
 * the rest of the batch stays. */
static void test_row_and_count_together(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w;
	struct cw_writer_stats ws;
	struct cw_request_row r;

	(void)state;
	assert_int_equal(cw_exec(st->db, "CREATE TRIGGER boom BEFORE INSERT ON request_totals WHEN NEW.route = '/boom'"
					 " BEGIN SELECT RAISE(ABORT, 'boom'); END;"
					 "CREATE TRIGGER bang BEFORE INSERT ON requests WHEN NEW.path = '/bang'"
					 " BEGIN SELECT RAISE(ABORT, 'bang'); END;"),
			 0);
	w = writer(st, 0);
	r = req("GET", "/ok", 200, MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req("GET", "/boom", 200, MS, -1);
	assert_true(cw_writer_request(w, &r) < 0);
	r = req("GET", "/bang", 200, MS, -1);
	assert_true(cw_writer_request(w, &r) < 0);
	r = req("GET", "/ok", 200, MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	cw_writer_get_stats(w, &ws);
	assert_int_equal(ws.requests, 2);
	assert_int_equal(ws.failed_rows, 2);
	assert_int_equal(cw_writer_free(w), 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests"), 2);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals"), 2);
	assert_int_equal(q1(st, "SELECT count(*) FROM request_totals WHERE route IN ('/boom', '/bang')"), 0);
	cw_store_close(st);
}

/* A batch whose COMMIT fails takes its requests and their counts with
 * it: the stats stop counting them, and routes first seen in it are
 * forgotten (the file does not have them). */
static void test_lost_batch(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w;
	struct cw_writer_stats ws;
	struct cw_request_row r;
	const char *ok[] = { "/a", "/b", "/c" };
	char p[32];

	(void)state;
	/* a deferred foreign key fails at COMMIT, when the batch has a /lose request */
	assert_int_equal(cw_exec(st->db,
				 "PRAGMA foreign_keys = ON;"
				 "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
				 "CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);"
				 "CREATE TRIGGER lose AFTER INSERT ON requests WHEN NEW.path = '/lose'"
				 " BEGIN INSERT INTO child VALUES (42); END;"),
			 0);
	w = writer(st, 0);
	for (int i = 0; i < 3; i++) {
		r = req("GET", ok[i], 200, MS, -1);
		assert_int_equal(cw_writer_request(w, &r), 0);
	}
	assert_int_equal(cw_writer_flush(w), 0);
	r = req("GET", "/lose", 200, MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	/* 29 new routes: the cap (32) is full, in memory only */
	for (int i = 0; i < 28; i++) {
		snprintf(p, sizeof(p), "/lost/%d", i);
		r = req("GET", p, 200, MS, -1);
		assert_int_equal(cw_writer_request(w, &r), 0);
	}
	assert_true(cw_writer_flush(w) < 0);
	cw_writer_get_stats(w, &ws);
	assert_int_equal(ws.requests, 3);
	assert_int_equal(ws.failed_rows, 29);
	/* the routes of the lost batch are not taken: /new keeps its path */
	r = req("GET", "/new", 200, MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	assert_int_equal(cw_writer_flush(w), 0);
	cw_writer_get_stats(w, &ws);
	assert_int_equal(ws.requests, 4);
	assert_int_equal(ws.requests_other_route, 0);
	assert_int_equal(cw_writer_free(w), 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests"), 4);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals"), 4);
	assert_int_equal(q1(st, "SELECT count(*) FROM request_totals WHERE route = '/new'"), 1);
	cw_store_close(st);
}

/* Retention: ordinary requests go first (the old ones with the evidence),
 * slow (over 2 s, or 3x the route's mean) and failed ones last;
 * request_totals never. */
static int kind_of(int i)
{
	if (i % 100 == 10)
		return 1; /* failed: 503 */
	if (i % 100 == 20)
		return 2; /* failed: no status, connection closed */
	if (i % 100 == 30)
		return 3; /* slow: over 2 s */
	if (i % 100 == 40)
		return 4; /* slow: 10x the route's mean (20 ms) but under 2 s */
	if (i % 100 == 50)
		return -1; /* ordinary: no status, but the connection went idle (not closed) */
	return 0;
}

static void test_retention_keeps_slow_and_failed(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w = writer(st, 0);
	struct cw_retention_counts c = { 0 };
	int64_t used, totals, n = 20000, kept = 0;
	int i;

	(void)state;
	for (i = 0; i < n; i++) {
		int k = kind_of(i);
		struct cw_request_row r = req("POST", "/v1/completions",
					      k == 1   ? 503
					      : k == 2 ? 0
						       : 200,
					      k == 3   ? 3000 * MS
					      : k == 4 ? 200 * MS
						       : 20 * MS,
					      5 * (int64_t)MS);

		if (k == 2)
			r.end = "closed";
		if (k == -1) {
			r.status = 0;
			r.end = "idle";
		}
		kept += k > 0;
		assert_int_equal(cw_writer_request(w, &r), 0);
	}
	{
		struct cw_engine_metric_row e = {
			.pid = 100, .port = 8080, .engine = "llama.cpp", .name = "queue_depth", .value = 3, .wall_ns = 1
		};

		assert_int_equal(cw_writer_engine_metric(w, &e), 0);
	}
	assert_int_equal(cw_writer_free(w), 0);
	totals = q1(st, "SELECT sum(count) FROM request_totals");
	assert_int_equal(totals, n);
	used = cw_store_used_bytes(st);

	/* a quarter less: ordinary requests only, oldest first */
	assert_int_equal(cw_retention_enforce_tiers(st, used - used / 4, 60LL * 1000 * MS, &c), 0);
	assert_true(cw_store_used_bytes(st) <= used - used / 4);
	assert_true(c.requests > 0);
	assert_int_equal(c.requests_kept, 0);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests"), n - c.requests);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE status = 503 OR end_reason = 'closed'"
				" OR duration_ns > 20000000"),
			 kept);
	/* with the evidence (tier 2): exactly the ordinary requests that
	 * ended over 60 s before the newest one started (10 ms apart, 20 ms
	 * long: all but the last 6003) */
	{
		int64_t k = 0;

		for (int64_t j = 0; j < n; j++)
			k += kind_of((int)j) > 0 || j >= n - 6003;
		assert_int_equal(q1(st, "SELECT count(*) FROM requests"), k);
		assert_int_equal(c.requests, n - k);
		assert_int_equal(q1(st, "SELECT count(*) FROM requests WHERE end_reason = 'idle'"), 60);
	}
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals"), totals);

	/* to a tenth: every ordinary one goes before any kept one, then the
	 * kept ones oldest first */
	memset(&c, 0, sizeof(c));
	used = cw_store_used_bytes(st);
	assert_int_equal(cw_retention_enforce_tiers(st, used / 10, 60LL * 1000 * MS, &c), 0);
	assert_true(c.requests_kept > 0);
	assert_int_equal(
		q1(st,
		   "SELECT count(*) FROM requests WHERE duration_ns = 20000000 AND end_reason != 'closed' AND status IS NOT 503"),
		0);
	assert_int_equal(q1(st, "SELECT count(*) FROM requests"), kept - c.requests_kept);
	if (kept > c.requests_kept) {
		int64_t m = q1(st, "SELECT min(id) FROM requests"), k = 0;

		for (int64_t id = m; id <= n; id++)
			k += kind_of((int)id - 1) > 0;
		assert_int_equal(kept - c.requests_kept, k);
	}
	assert_int_equal(q1(st, "SELECT count(*) FROM engine_metrics"), c.engine_metrics ? 0 : 1);
	assert_int_equal(q1(st, "SELECT sum(count) FROM request_totals"), totals);
	cw_store_close(st);
}

/* `causeway query` reads the three tables. */
static void test_query_reads_tables(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w = writer(st, 0);
	struct cw_engine_metric_row e = {
		.pid = 9, .port = 8000, .engine = "vllm", .name = "running", .value = 4, .wall_ns = 5
	};
	struct cw_request_row r = req("POST", "/v1/completions", 200, 30 * MS, 10 * (int64_t)MS);
	const char *sqls[] = {
		"SELECT path, ttft_ns FROM requests",
		"SELECT route, count, dur_le_50ms, ttft_le_10ms FROM request_totals",
		"SELECT engine, name, value FROM engine_metrics",
	};
	struct cw_ro_result *res;
	char err[256];

	(void)state;
	assert_int_equal(cw_writer_request(w, &r), 0);
	assert_int_equal(cw_writer_engine_metric(w, &e), 0);
	e.value = NAN;
	assert_int_equal(cw_writer_engine_metric(w, &e), -EINVAL);
	assert_int_equal(cw_writer_free(w), 0);
	cw_store_close(st);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(cw_ro_query_collect(path, sqls[i], NULL, 0, NULL, &res, err, sizeof(err)), 0);
		assert_int_equal(res->nrows, 1);
		cw_ro_result_free(res);
	}
	assert_int_equal(cw_ro_query_collect(path, "DELETE FROM request_totals", NULL, 0, NULL, &res, err, sizeof(err)),
			 -EPERM);
}

/* The exposition of a small store, whole. */
static const char golden[] =
	"# HELP causeway_inference_request_duration_seconds Duration of the HTTP requests the traced servers "
	"answered, first request byte read to last response byte written, per route.\n"
	"# TYPE causeway_inference_request_duration_seconds histogram\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"0.01\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"0.025\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"0.05\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"0.1\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"0.25\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"0.5\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"1\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"2.5\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"5\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"10\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",le=\"+Inf\"} 1\n"
	"causeway_inference_request_duration_seconds_sum{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\"} 0.001\n"
	"causeway_inference_request_duration_seconds_count{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.01\"} 0\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.025\"} 0\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.05\"} 0\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.1\"} 0\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.25\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.5\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"1\"} 1\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"2.5\"} 2\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"5\"} 2\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"10\"} 2\n"
	"causeway_inference_request_duration_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"+Inf\"} 3\n"
	"causeway_inference_request_duration_seconds_sum{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\"} 14.75\n"
	"causeway_inference_request_duration_seconds_count{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\"} 3\n"
	"# HELP causeway_inference_ttft_seconds Time to first token: first request byte read to the first response "
	"body bytes written, per route, for requests whose response had a body.\n"
	"# TYPE causeway_inference_ttft_seconds histogram\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.01\"} 0\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.025\"} 0\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.05\"} 1\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.1\"} 1\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.25\"} 1\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"0.5\"} 2\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"1\"} 2\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"2.5\"} 2\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"5\"} 2\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"10\"} 2\n"
	"causeway_inference_ttft_seconds_bucket{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",le=\"+Inf\"} 2\n"
	"causeway_inference_ttft_seconds_sum{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\"} 0.55\n"
	"causeway_inference_ttft_seconds_count{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\"} 2\n"
	"# HELP causeway_inference_requests_total HTTP requests the traced servers answered, by status (none: the "
	"connection ended before a status line) and its class.\n"
	"# TYPE causeway_inference_requests_total counter\n"
	"causeway_inference_requests_total{node=\"n1\",port=\"8080\",method=\"GET\",route=\"/health\",status=\"200\",code_class=\"2xx\"} 1\n"
	"causeway_inference_requests_total{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",status=\"none\",code_class=\"none\"} 1\n"
	"causeway_inference_requests_total{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",status=\"200\",code_class=\"2xx\"} 1\n"
	"causeway_inference_requests_total{node=\"n1\",port=\"8080\",method=\"POST\",route=\"/v1/completions\",status=\"503\",code_class=\"5xx\"} 1\n"
	"# HELP causeway_inference_engine_queue_depth Requests waiting in the inference engine's queue (its own "
	"/metrics, newest sample).\n"
	"# TYPE causeway_inference_engine_queue_depth gauge\n"
	"causeway_inference_engine_queue_depth{node=\"n1\",engine=\"vllm\",pid=\"9\",port=\"8000\"} 7\n"
	"# HELP causeway_inference_engine_running Requests the inference engine is running (its own /metrics, "
	"newest sample).\n"
	"# TYPE causeway_inference_engine_running gauge\n"
	"# HELP causeway_inference_engine_kv_cache_usage_ratio Share of the inference engine's KV cache in use, "
	"0..1 (its own /metrics, newest sample).\n"
	"# TYPE causeway_inference_engine_kv_cache_usage_ratio gauge\n"
	"causeway_inference_engine_kv_cache_usage_ratio{node=\"n1\",engine=\"vllm\",pid=\"9\",port=\"8000\"} 0.25\n"
	"# HELP causeway_inference_engine_preemptions_total Requests the inference engine preempted since it "
	"started (its own /metrics, newest sample).\n"
	"# TYPE causeway_inference_engine_preemptions_total counter\n";

static void test_metrics_golden(void **state)
{
	struct cw_store *st = fresh();
	struct cw_writer *w = writer(st, 0);
	struct cw_request_row r;
	struct cw_engine_metric_row e = { .pid = 9, .port = 8000, .engine = "vllm", .name = "queue_depth" };
	struct strbuf sb;
	const char *prom;
	char cmd[256], mpath[80];
	FILE *f;

	(void)state;
	r = req("GET", "/health", 200, 1 * MS, -1);
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req("POST", "/v1/completions", 200, 250 * MS, 50 * (int64_t)MS);
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req("POST", "/v1/completions", 503, 2500 * MS, 500 * (int64_t)MS);
	assert_int_equal(cw_writer_request(w, &r), 0);
	r = req("POST", "/v1/completions?api_key=x", 0, 12000 * MS, -1);
	r.end = "closed";
	assert_int_equal(cw_writer_request(w, &r), 0);
	/* the newest sample of a series; a stale series (over 60 s older
	 * than its name's newest) is gone */
	e.wall_ns = 100ull * 1000 * MS, e.value = 3;
	assert_int_equal(cw_writer_engine_metric(w, &e), 0);
	e.wall_ns = 101ull * 1000 * MS, e.value = 7;
	assert_int_equal(cw_writer_engine_metric(w, &e), 0);
	e.pid = 10, e.wall_ns = 30ull * 1000 * MS, e.value = 99;
	assert_int_equal(cw_writer_engine_metric(w, &e), 0);
	e.pid = 9, e.name = "kv_cache_usage_ratio", e.value = 0.25;
	assert_int_equal(cw_writer_engine_metric(w, &e), 0);
	e.name = "some_other_metric", e.value = 1;
	assert_int_equal(cw_writer_engine_metric(w, &e), 0);
	assert_int_equal(cw_writer_free(w), 0);
	strbuf_init(&sb, 1 << 20);
	assert_int_equal(cw_metrics_render_inference(st->db, &sb), 0);
	assert_string_equal(strbuf_str(&sb), golden);
	/* promtool agrees with the exposition, where it is installed (the
	 * golden tests require it: tests/golden/test_metrics_demo.sh) */
	snprintf(mpath, sizeof(mpath), "/tmp/cw-test-req-metrics-%d.txt", (int)getpid());
	f = fopen(mpath, "w");
	assert_non_null(f);
	fputs(strbuf_str(&sb), f);
	fclose(f);
	prom = getenv("PROMTOOL");
	if (!prom)
		prom = access("/usr/bin/promtool", X_OK) ? NULL : "/usr/bin/promtool";
	if (prom) {
		snprintf(cmd, sizeof(cmd), "%s check metrics < %s", prom, mpath);
		assert_int_equal(system(cmd), 0);
	}
	unlink(mpath);
	strbuf_release(&sb);
	cw_store_close(st);
}

/* A file before v11 has the families, without series. */
static void test_metrics_old_file(void **state)
{
	struct cw_store *st = fresh();
	struct strbuf sb;

	(void)state;
	assert_int_equal(cw_exec(st->db, "DROP TABLE requests; DROP TABLE request_totals; DROP TABLE engine_metrics"),
			 0);
	strbuf_init(&sb, 1 << 20);
	assert_int_equal(cw_metrics_render_inference(st->db, &sb), 0);
	assert_non_null(strstr(strbuf_str(&sb), "# TYPE causeway_inference_requests_total counter\n"));
	assert_null(strstr(strbuf_str(&sb), "{"));
	strbuf_release(&sb);
	cw_store_close(st);
}

static int teardown(void **state)
{
	(void)state;
	remove_store_files(path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_counts_equal_rows, teardown),
		cmocka_unit_test_teardown(test_counts_equal_rows_threaded, teardown),
		cmocka_unit_test_teardown(test_bucket_edges, teardown),
		cmocka_unit_test_teardown(test_route_cap, teardown),
		cmocka_unit_test_teardown(test_hostile_strings, teardown),
		cmocka_unit_test_teardown(test_row_and_count_together, teardown),
		cmocka_unit_test_teardown(test_lost_batch, teardown),
		cmocka_unit_test_teardown(test_retention_keeps_slow_and_failed, teardown),
		cmocka_unit_test_teardown(test_query_reads_tables, teardown),
		cmocka_unit_test_teardown(test_metrics_golden, teardown),
		cmocka_unit_test_teardown(test_metrics_old_file, teardown),
	};

	snprintf(path, sizeof(path), "/tmp/cw-test-requests-%d.db", (int)getpid());
	return cmocka_run_group_tests(tests, NULL, NULL);
}
