/* Unit tests of merge (src/fleet/merge.c, merge_skew.c): collective
 * alignment for clock skew, and merges of small stores built with the
 * writer: ids, relabelling, refusals and cleanup. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/merge.h"
#include "store/store.h"
#include "store/writer.h"
#include "tenant/cgroup_row.h"
#include "tenant/tenant.h"

#define MS 1000000LL

/* Irregular step lengths, as real steps have. */
static void series(int64_t *v, int n, int64_t t0, int first)
{
	int64_t t = t0;
	for (int k = 0; k < first + n; k++) {
		t += 100 * MS + (k * 7 % 5) * 9 * MS;
		if (k >= first)
			v[k - first] = t;
	}
}

static void align_finds_offset(void **state)
{
	int64_t a[50], b[50];
	struct cw_skew_align r;

	(void)state;
	series(a, 50, 0, 0);
	series(b, 50, 250 * MS, 0);
	assert_int_equal(cw_merge_align(a, 50, b, 50, 64, &r), 0);
	assert_int_equal(r.offset_ns, 250 * MS);
	assert_int_equal(r.shift, 0);
	assert_int_equal(r.samples, 50);
	assert_int_equal(r.spread_ns, 0);
}

static void align_with_late_start_and_jitter(void **state)
{
	int64_t a[60], b[50];
	struct cw_skew_align r;

	(void)state;
	series(a, 60, 0, 0);
	/* b started tracing 7 collectives later and runs 40 ms behind. */
	series(b, 50, -40 * MS, 7);
	for (int k = 0; k < 50; k++)
		b[k] += (k % 3) * 20000; /* up to 40 us of network jitter */
	assert_int_equal(cw_merge_align(a, 60, b, 50, 64, &r), 0);
	assert_int_equal(r.shift, -7);
	assert_true(llabs(r.offset_ns + 40 * MS) <= 40000);
	assert_true(r.spread_ns <= 40000);
}

/* The spread is the 90th percentile of the absolute deviations from the
 * median: one collective in five completing 400 us early on b. */
static void align_spread_is_p90_of_deviations(void **state)
{
	int64_t a[50], b[50];
	struct cw_skew_align r;

	(void)state;
	series(a, 50, 0, 0);
	series(b, 50, 250 * MS, 0);
	for (int k = 0; k < 50; k += 5)
		b[k] -= 400000;
	assert_int_equal(cw_merge_align(a, 50, b, 50, 64, &r), 0);
	assert_int_equal(r.offset_ns, 250 * MS);
	assert_int_equal(r.shift, 0);
	assert_int_equal(r.spread_ns, 400000);
}

static void align_needs_three_pairs(void **state)
{
	int64_t a[2] = { 1, 2 }, b[2] = { 1, 2 };
	struct cw_skew_align r;

	(void)state;
	assert_int_equal(cw_merge_align(a, 2, b, 2, 4, &r), -ENODATA);
}

static void align_periodic_prefers_small_offset(void **state)
{
	int64_t a[40], b[40];
	struct cw_skew_align r;

	(void)state;
	/* Perfectly periodic steps: only the offset modulo the period is
	 * measurable; the smallest one is taken. */
	for (int k = 0; k < 40; k++) {
		a[k] = k * 100 * MS;
		b[k] = k * 100 * MS + 130 * MS;
	}
	assert_int_equal(cw_merge_align(a, 40, b, 40, 8, &r), 0);
	assert_int_equal(r.offset_ns, 30 * MS);
	/* ... and says it is ambiguous, unlike an irregular pattern. */
	assert_true(r.candidates > 1);
	/* Irregular steps (random lengths) fit at one shift only. */
	unsigned seed = 7;
	int64_t t = 0;
	for (int k = 0; k < 40; k++) {
		t += 100 * MS + (rand_r(&seed) % 40) * MS;
		a[k] = t;
		b[k] = t + 130 * MS;
	}
	assert_int_equal(cw_merge_align(a, 40, b, 40, 8, &r), 0);
	assert_int_equal(r.offset_ns, 130 * MS);
	assert_int_equal(r.candidates, 1);
}

static char dir[64];

static int make_db(const char *name, const char *node, int nev, uint64_t stack_hash)
{
	char path[128], err[256];
	struct cw_session_info si = { .node = node, .kind = "test", .started_wall_ns = 1,
				      .rank = -1, .local_rank = -1, .world_size = -1 };
	struct cw_writer_opts wo = { .node = node };
	struct cw_writer *w;
	struct cw_store *st;
	int64_t sid, stk;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)) || cw_session_begin(st, &si, &sid))
		return -1;
	wo.session_id = sid;
	if (cw_writer_new(&w, st, &wo))
		return -1;
	stk = cw_writer_intern_stack(w, stack_hash, 1, "frame");
	for (int i = 0; i < nev; i++) {
		struct cw_event_row r = { .mono_ns = 1000 + (uint64_t)i, .wall_ns = 1700000000000000000ULL + (uint64_t)i * 1000,
					  .duration_ns = 10, .pid = 1, .tid = 1, .comm = "t", .source = "cuda",
					  .op = "cudaMalloc", .has_ret = 1, .device = 0, .stack_id = stk };
		if (cw_writer_event(w, &r))
			return -1;
	}
	/* one off-CPU interval per store: ids collide unless merge offsets them */
	struct cw_offcpu_row o = { .pid = 1, .tid = 1, .comm = "t", .start_mono_ns = 1000, .end_mono_ns = 1100,
				   .wall_ns = 1700000000000000000ULL, .reason = "blocked" };
	if (cw_writer_offcpu(w, &o))
		return -1;
	/* A pod's container with its whole identity, and one pressure sample. */
	{
		static const char cgpath[] = "/kubepods.slice/kubepods-burstable.slice/"
					   "kubepods-burstable-pod0e1d2c3b_4a59_6877_8695_a4b3c2d1e0f9.slice/"
					   "cri-containerd-3f2b9c0d1e4a5b6c7d8e9f00112233445566778899aabbccddeeff0011223344.scope";
		struct cw_tenant t;
		struct cw_cgroup_row cr = { .cgroup_id = 4242, .path = cgpath, .t = &t, .seen_wall_ns = 1700000000000000000ULL };
		struct cw_pressure_row pr = { .cgroup_id = 4242, .wall_ns = 1700000000000000000ULL, .mono_ns = 1000,
					      .psi_total_us = { 1, 2, 3, 4, 5, 6 }, .nr_periods = 10, .nr_throttled = 7,
					      .throttled_usec = 9000, .quota_us = 50000, .period_us = 100000 };

		if (cw_tenant_parse(cgpath, &t))
			return -1;
		snprintf(t.pod, sizeof(t.pod), "trainer-%s", node);
		snprintf(t.ns, sizeof(t.ns), "ml");
		if (cw_tenant_write_cgroup(w, &cr) || cw_writer_cgroup_pressure(w, &pr))
			return -1;
	}
	cw_writer_free(w);
	cw_store_close(st);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cw-test-merge-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return make_db("a.db", "na", 5, 7) || make_db("b.db", "nb", 3, 7) || make_db("a2.db", "na", 2, 8);
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void remove_out(void)
{
	const char *sfx[] = { "", "-wal", "-shm" };
	char p[160];

	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/out.db%s", dir, sfx[i]);
		unlink(p);
	}
}

static int only_inputs_left(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ok = 1;

	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".tmp-") || !strncmp(e->d_name, "out", 3))
			ok = 0;
	if (d)
		closedir(d);
	return ok;
}

static int run(const char **paths, const char **relabel, int n, const char *out, struct cw_merge_result *r)
{
	struct cw_merge_input in[8];
	char p[8][128], o[128];
	struct cw_merge_opts opts = { .inputs = in, .ninputs = n, .out_path = o };

	for (int i = 0; i < n; i++) {
		snprintf(p[i], sizeof(p[i]), "%s/%s", dir, paths[i]);
		in[i].path = p[i];
		in[i].relabel = relabel ? relabel[i] : NULL;
	}
	snprintf(o, sizeof(o), "%s/%s", dir, out);
	return cw_merge_run(&opts, r);
}

static void merge_counts_and_dedup(void **state)
{
	const char *paths[] = { "a.db", "b.db" };
	struct cw_merge_result r;
	char out[128], err[256];
	struct cw_store *st;
	sqlite3_stmt *q;

	(void)state;
	assert_int_equal(run(paths, NULL, 2, "out.db", &r), 0);
	assert_int_equal(r.nnodes, 2);
	assert_int_equal(r.rows[CW_MT_EVENTS], 8);
	/* The two inputs' sessions and the merge's own. */
	assert_int_equal(r.rows[CW_MT_SESSIONS], 3);
	assert_int_equal(r.in_rows[CW_MT_SESSIONS], 2);
	assert_int_equal(r.in_rows[CW_MT_STACKS], 2);
	assert_int_equal(r.rows[CW_MT_STACKS], 1);
	assert_string_equal(r.nodes[1].name, "nb");
	assert_int_equal(r.nodes[1].rows[CW_MT_EVENTS], 3);
	cw_merge_result_free(&r);
	snprintf(out, sizeof(out), "%s/out.db", dir);
	assert_int_equal(cw_store_open(&st, out, CW_STORE_READONLY, err, sizeof(err)), 0);
	/* Ids unique and in time order; every event on its own node's session. */
	assert_int_equal(sqlite3_prepare_v2(st->db,
					    "SELECT count(DISTINCT e.id), sum(s.node = e.node), count(DISTINCT e.stack_id),"
					    " sum(e.id > 1 AND e.wall_ns < (SELECT wall_ns FROM events p WHERE p.id = e.id - 1))"
					    " FROM events e JOIN sessions s ON s.id = e.session_id",
					    -1, &q, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(q, 0), 8);
	assert_int_equal(sqlite3_column_int(q, 1), 8);
	assert_int_equal(sqlite3_column_int(q, 2), 1);
	assert_int_equal(sqlite3_column_int(q, 3), 0);
	sqlite3_finalize(q);
	/* Identity rows are copied whole: the containers view answers per
	 * node as it does on each input, and pressure samples follow. */
	assert_int_equal(sqlite3_prepare_v2(st->db,
					    "SELECT c.node, c.runtime, c.container_id, c.pod, c.namespace, c.pod_uid, c.qos,"
					    " c.tenant, c.first_seen_wall_ns, (SELECT count(*) FROM cgroup_pressure p"
					    " WHERE p.node = c.node AND p.cgroup_id = c.cgroup_id AND p.nr_throttled = 7"
					    " AND p.session_id = (SELECT id FROM sessions s WHERE s.node = c.node AND s.kind != 'merge'))"
					    " FROM containers c WHERE c.cgroup_id = 4242 ORDER BY c.node",
					    -1, &q, NULL),
			 SQLITE_OK);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sqlite3_step(q), SQLITE_ROW);
		assert_string_equal((const char *)sqlite3_column_text(q, 0), i ? "nb" : "na");
		assert_string_equal((const char *)sqlite3_column_text(q, 1), "containerd");
		assert_string_equal((const char *)sqlite3_column_text(q, 2),
				    "3f2b9c0d1e4a5b6c7d8e9f00112233445566778899aabbccddeeff0011223344");
		assert_string_equal((const char *)sqlite3_column_text(q, 3), i ? "trainer-nb" : "trainer-na");
		assert_string_equal((const char *)sqlite3_column_text(q, 4), "ml");
		assert_string_equal((const char *)sqlite3_column_text(q, 5), "0e1d2c3b-4a59-6877-8695-a4b3c2d1e0f9");
		assert_string_equal((const char *)sqlite3_column_text(q, 6), "burstable");
		assert_string_equal((const char *)sqlite3_column_text(q, 7), "pod:0e1d2c3b-4a59-6877-8695-a4b3c2d1e0f9");
		assert_int_equal(sqlite3_column_int64(q, 8), 1700000000000000000LL);
		assert_int_equal(sqlite3_column_int(q, 9), 1);
	}
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	cw_store_close(st);
	remove_out();
	assert_true(only_inputs_left());
}

static void same_node_refused_then_relabelled(void **state)
{
	const char *paths[] = { "a.db", "a2.db" };
	const char *relabel[] = { NULL, "nc" };
	struct cw_merge_result r;

	(void)state;
	assert_int_equal(run(paths, NULL, 2, "out.db", &r), -EEXIST);
	assert_non_null(strstr(r.err, "both hold node \"na\""));
	cw_merge_result_free(&r);
	assert_true(only_inputs_left());
	assert_int_equal(run(paths, relabel, 2, "out.db", &r), 0);
	assert_string_equal(r.nodes[1].name, "nc");
	assert_string_equal(r.nodes[1].orig, "na");
	assert_int_equal(r.nodes[1].rows[CW_MT_EVENTS], 2);
	/* Different stack hashes: both kept. */
	assert_int_equal(r.rows[CW_MT_STACKS], 2);
	assert_int_equal(r.rows[CW_MT_OFFCPU], 2);
	cw_merge_result_free(&r);
	/* A merged store holds two nodes: one name cannot relabel both. */
	{
		const char *again[] = { "out.db", "b.db" };
		const char *rl[] = { "nz", NULL };

		assert_int_equal(run(again, rl, 2, "out2.db", &r), -EINVAL);
		assert_non_null(strstr(r.err, "holds 2 nodes"));
		cw_merge_result_free(&r);
	}
	remove_out();
}

static void bad_input_leaves_nothing(void **state)
{
	const char *paths[] = { "a.db", "missing.db" };
	struct cw_merge_result r;
	FILE *f;
	char p[128];

	(void)state;
	assert_int_equal(run(paths, NULL, 2, "out.db", &r), -ENOENT);
	assert_non_null(strstr(r.err, "does not exist"));
	cw_merge_result_free(&r);
	snprintf(p, sizeof(p), "%s/junk.db", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	for (int i = 0; i < 512; i++)
		fputs("not a database ", f);
	fclose(f);
	paths[1] = "junk.db";
	assert_int_equal(run(paths, NULL, 2, "out.db", &r), -ENOTSUP);
	cw_merge_result_free(&r);
	assert_true(only_inputs_left());
	/* The output may not be an input. */
	assert_int_equal(run(paths, NULL, 1, "a.db", &r), -EINVAL);
	cw_merge_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(align_finds_offset),
		cmocka_unit_test(align_with_late_start_and_jitter),
		cmocka_unit_test(align_needs_three_pairs),
		cmocka_unit_test(align_spread_is_p90_of_deviations),
		cmocka_unit_test(align_periodic_prefers_small_offset),
		cmocka_unit_test(merge_counts_and_dedup),
		cmocka_unit_test(same_node_refused_then_relabelled),
		cmocka_unit_test(bad_input_leaves_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
