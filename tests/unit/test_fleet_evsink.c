/* Fetched events written straight into calls/kevents (src/fleet/
 * fetch_events.c) read back exactly as the same rows inserted through the
 * events view's trigger: same ids, seq, times, threads, ops, strings and
 * Python stacks; rows the view would refuse are skipped alone. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "fleet/fetch_events.h"
#include "store/store.h"

/* node, seq, wall, mono, pid, tid, cgroup, comm, source, op, dur, a0..a3,
 * bytes, detail, ret, device, anomalous, py hash, depth, frames, file,
 * line, function. Two nodes, calls and kernel events, a seq equal to
 * and unlike the id, a thread crossing a 2^31 ns base (and one between
 * 2^30 and 2^31), a thread in another cgroup, NULL columns,
 * repeated and new strings and stacks, and rows the view refuses. */
static const char *const rows[] = {
	"[\"a\",2,1000000005,5,10,11,7,\"python\",\"cuda\",\"cudaLaunchKernel\",900,1,2,3,4,null,\"gemm\",0,0,0,"
	"77,2,\"[]\",\"t.py\",9,\"f\"]",
	"[\"a\",2,1000000105,105,10,11,7,\"python\",\"cuda\",\"cudaLaunchKernel\",800,1,2,3,4,null,\"gemm\",0,0,1,"
	"77,2,\"[]\",\"t.py\",9,\"f\"]",
	"[\"a\",40,1000000205,205,10,11,7,\"python\",\"sched\",\"offcpu\",50,null,null,null,null,null,null,null,null,"
	"null,null,null,null,null,null,null]",
	"[\"a\",41,3147483653,2147483653,10,11,7,\"python\",\"cuda\",\"cudaMemcpy\",null,null,null,null,null,4096,"
	"\"h2d\",0,0,null,78,1,\"[1]\",\"u.py\",3,\"g\"]",
	"[\"a\",42,2500000000,1500000000,10,11,7,\"python\",\"cuda\",\"cudaMemcpy\",3,null,null,null,null,4096,"
	"\"h2d\",0,0,0,null,null,null,null,null,null]",
	"[\"a\",43,1000000300,300,10,11,8,\"python\",\"cuda\",\"cudaMemcpy\",3,null,null,null,null,4096,"
	"\"h2d\",0,0,0,null,null,null,null,null,null]",
	"[\"b\",1,1000000010,10,20,21,null,null,\"nccl\",\"ncclAllReduce\",5000,null,null,null,null,1024,null,null,"
	"1,0,null,null,null,null,null,null]",
	"[\"b\",2,1000000020,20,20,21,null,null,\"io\",\"read\",70,null,null,null,null,512,\"/x\",0,null,0,77,2,"
	"\"[]\",\"t.py\",9,\"f\"]",
	/* refused: no node; no op; a kernel event without seq */
	"[null,3,1000000030,30,20,21,null,null,\"cuda\",\"cudaFree\",1,null,null,null,null,null,null,null,null,0,"
	"null,null,null,null,null,null]",
	"[\"b\",4,1000000040,40,20,21,null,null,\"cuda\",null,1,null,null,null,null,null,null,null,null,0,"
	"null,null,null,null,null,null]",
	"[\"b\",null,1000000050,50,20,21,null,null,\"io\",\"write\",1,null,null,null,null,null,null,null,null,0,"
	"null,null,null,null,null,null]",
	"[\"b\",5,1000000060,60,20,21,null,null,\"cuda\",\"cudaFree\",1,null,null,null,null,null,\"gemm\",null,"
	"null,0,null,null,null,null,null,null]",
};

#define VIEW_INSERT                                                                                          \
	"INSERT INTO events (node, seq, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op, duration_ns, arg0," \
	" arg1, arg2, arg3, bytes, detail, ret, device, anomalous, py_stack_id)"                                      \
	" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21)"

static void bind_json(sqlite3_stmt *st, int i, json_t *v)
{
	if (json_is_integer(v))
		sqlite3_bind_int64(st, i, json_integer_value(v));
	else if (json_is_string(v))
		sqlite3_bind_text(st, i, json_string_value(v), -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* The reference: each row through the view, its stack interned first. */
static void through_view(sqlite3 *db, json_t *row)
{
	sqlite3_stmt *ins, *py;
	int64_t pid = 0;

	assert_int_equal(sqlite3_prepare_v2(db, VIEW_INSERT, -1, &ins, NULL), SQLITE_OK);
	if (json_is_integer(json_array_get(row, 20))) {
		assert_int_equal(sqlite3_prepare_v2(db,
						    "INSERT OR IGNORE INTO py_stacks (hash, depth, frames, user_file,"
						    " user_line, user_function) VALUES (?1,?2,?3,?4,?5,?6)",
						    -1, &py, NULL),
				 SQLITE_OK);
		for (int k = 0; k < 6; k++)
			bind_json(py, k + 1, json_array_get(row, 20 + (size_t)k));
		assert_int_equal(sqlite3_step(py), SQLITE_DONE);
		sqlite3_finalize(py);
		assert_int_equal(sqlite3_prepare_v2(db, "SELECT id FROM py_stacks WHERE hash = ?1", -1, &py, NULL),
				 SQLITE_OK);
		bind_json(py, 1, json_array_get(row, 20));
		assert_int_equal(sqlite3_step(py), SQLITE_ROW);
		pid = sqlite3_column_int64(py, 0);
		sqlite3_finalize(py);
	}
	for (int k = 0; k < 20; k++)
		bind_json(ins, k + 1, json_array_get(row, (size_t)k));
	if (pid)
		sqlite3_bind_int64(ins, 21, pid);
	int rc = sqlite3_step(ins);
	assert_true(rc == SQLITE_DONE || rc == SQLITE_CONSTRAINT);
	sqlite3_finalize(ins);
}

/* Every event as the view shows it, with its stack's hash and the
 * interned tables, one line per row. */
static char *dump(sqlite3 *db)
{
	static const char *const q[] = {
		"SELECT e.id, e.node, e.seq, e.session_id, e.wall_ns, e.mono_ns, e.pid, e.tid, e.cgroup_id, e.comm,"
		" e.source, e.op, e.duration_ns, e.arg0, e.arg1, e.arg2, e.arg3, e.bytes, e.detail, e.ret, e.device,"
		" e.stack_id, p.hash, p.user_file, e.anomalous FROM events e LEFT JOIN py_stacks p"
		" ON p.id = e.py_stack_id ORDER BY e.id",
		"SELECT * FROM calls ORDER BY id",
		"SELECT * FROM kevents ORDER BY id",
		"SELECT * FROM call_threads ORDER BY id",
		"SELECT * FROM call_ops ORDER BY id",
		"SELECT * FROM strings ORDER BY id",
		"SELECT hash, depth, frames, user_file, user_line, user_function FROM py_stacks ORDER BY id",
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		sqlite3_stmt *st;
		assert_int_equal(sqlite3_prepare_v2(db, q[i], -1, &st, NULL), SQLITE_OK);
		fprintf(f, "-- %zu\n", i);
		while (sqlite3_step(st) == SQLITE_ROW) {
			for (int c = 0; c < sqlite3_column_count(st); c++)
				fprintf(f, "%s|", sqlite3_column_type(st, c) == SQLITE_NULL ? "NULL"
											  : (const char *)sqlite3_column_text(st, c));
			fputc('\n', f);
		}
		sqlite3_finalize(st);
	}
	fclose(f);
	return buf;
}

static struct cw_store *open_store(char *dir, const char *name)
{
	char path[256], err[256];
	struct cw_store *st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	return st;
}

static void test_same_as_view(void **state)
{
	char dir[] = "/tmp/cw-evsink-XXXXXX";
	struct cw_store *a, *b;
	struct cw_evsink *sink;
	char *da, *db;
	int skipped = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	a = open_store(dir, "view.db");
	b = open_store(dir, "sink.db");
	/* Both stores start with an event, so ids continue from it. */
	for (int k = 0; k < 2; k++)
		assert_int_equal(sqlite3_exec((k ? b : a)->db,
					      "INSERT INTO events (node, seq, wall_ns, mono_ns, pid, tid, source, op)"
					      " VALUES ('z', 1, 1, 1, 1, 1, 'mem', 'page_alloc')",
					      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(cw_evsink_new(&sink, b->db), 0);
	assert_int_equal(sqlite3_exec(b->db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *row = json_loads(rows[i], 0, NULL);
		int r;

		assert_non_null(row);
		through_view(a->db, row);
		r = cw_evsink_put(sink, row);
		assert_true(r == 0 || r == 1);
		skipped += r;
		json_decref(row);
	}
	assert_int_equal(sqlite3_exec(b->db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	cw_evsink_free(sink);
	assert_int_equal(skipped, 3);
	da = dump(a->db);
	db = dump(b->db);
	assert_string_equal(db, da);
	assert_non_null(strstr(da, "cudaMemcpy"));
	free(da);
	free(db);
	cw_store_close(a);
	cw_store_close(b);
	{
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* A row of the wrong width is the agent's protocol error, not a skip. */
static void test_wrong_width(void **state)
{
	char dir[] = "/tmp/cw-evsink-XXXXXX";
	struct cw_store *s;
	struct cw_evsink *sink;
	json_t *row = json_loads("[\"a\",1,2,3]", 0, NULL);

	(void)state;
	assert_non_null(mkdtemp(dir));
	s = open_store(dir, "s.db");
	assert_int_equal(cw_evsink_new(&sink, s->db), 0);
	assert_true(cw_evsink_put(sink, row) < 0);
	json_decref(row);
	cw_evsink_free(sink);
	cw_store_close(s);
	{
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_view),
		cmocka_unit_test(test_wrong_width),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
