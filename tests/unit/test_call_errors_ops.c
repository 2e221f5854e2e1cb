/* The cuda_error headline names each failing op with its own count: a
 * process whose cudaMalloc fails 20 of 30 times and whose
 * cudaStreamSynchronize fails 7 of 10 times, both with cudaErrorNoDevice
 * (one chain), reads "cudaMalloc failed 20 times (67 % of 30 calls),
 * cudaStreamSynchronize 7 times (70 % of 10 calls)", never "cudaMalloc
 * failed 27 times" (the group's sum under the first op's name, as the
 * shipped cuda-no-device demo said: 193,954 where cudaLaunchKernel had
 * 165,550). Past four ops the rest is one clause. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define OFF 1700000000000000000LL
#define PID 100
#define CUDA_ERROR_NO_DEVICE 100

struct fx {
	char path[64];
	struct cw_store *st;
};

/* ops[i] is called calls[i] times, the first failing[i] of them failing. */
static void build(struct fx *f, const char *const *ops, const int *calls, const int *failing, int n)
{
	struct cw_session_info si = {.node = "n1", .kind = "test", .started_wall_ns = T0 + OFF,
				     .mono_to_wall_ns = OFF, .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_writer_opts wo = {.node = "n1"};
	struct cw_process_row pr = {.pid = PID, .comm = "python", .rank = -1, .local_rank = -1, .world_size = -1,
				    .start_wall_ns = T0 + OFF};
	struct cw_writer *w;
	uint64_t t = T0;
	char err[256];
	int64_t sid;
	int fd;

	strcpy(f->path, "/tmp/cw-test-errops-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&w, f->st, &wo), 0);
	assert_int_equal(cw_writer_process(w, &pr), 0);
	for (int o = 0; o < n; o++)
		for (int i = 0; i < calls[o]; i++) {
			struct cw_event_row r = {
				.mono_ns = t, .wall_ns = t + OFF, .duration_ns = 20000, .pid = PID, .tid = PID,
				.comm = "python", .source = "cuda", .op = ops[o], .device = 0, .has_ret = 1,
				.ret = i < failing[o] ? CUDA_ERROR_NO_DEVICE : 0,
			};
			assert_int_equal(cw_writer_event(w, &r), 0);
			t += 10 * MS;
		}
	assert_int_equal(cw_writer_free(w), 0);
}

static void destroy(struct fx *f)
{
	cw_store_close(f->st);
	remove_store_files(f->path);
}

static const struct cw_chain *explain_error(struct fx *f, struct cw_explain_result *r)
{
	struct cw_explain_opts o = {0};
	const struct cw_chain *c;

	assert_int_equal(cw_explain_run(f->st->db, &o, r), 0);
	assert_non_null(c = find(r, CW_KIND_CUDA_ERROR));
	print_message("%s\n", c->summary);
	return c;
}

static void test_two_ops_own_counts(void **state)
{
	static const char *const ops[] = {"cudaStreamSynchronize", "cudaMalloc"};
	static const int calls[] = {10, 30}, failing[] = {7, 20};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	build(&f, ops, calls, failing, 2);
	c = explain_error(&f, &r);
	assert_string_equal(c->op, "cudaMalloc");
	assert_non_null(strstr(c->summary, "cudaMalloc failed 20 times (67 % of 30 calls), "
					   "cudaStreamSynchronize 7 times (70 % of 10 calls), "));
	assert_null(strstr(c->summary, "27 times"));
	/* The chain's own counts stay the group's, and each op has its own. */
	assert_int_equal(c->slow_count, 27);
	assert_int_equal(c->count, 40);
	assert_int_equal(c->nfailed_ops, 2);
	for (int i = 0; i < 2; i++) {
		int k = !strcmp(c->failed_ops[i].op, "cudaMalloc");

		assert_int_equal(c->failed_ops[i].failing, failing[k]);
		assert_int_equal(c->failed_ops[i].calls, calls[k]);
	}
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_many_ops_one_clause(void **state)
{
	static const char *const ops[] = {"cudaFree", "cudaMalloc", "cudaMemcpy", "cudaLaunchKernel",
					  "cudaStreamSynchronize", "cudaEventRecord"};
	static const int calls[] = {6, 6, 6, 6, 6, 6}, failing[] = {1, 6, 5, 4, 3, 2};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	build(&f, ops, calls, failing, 6);
	c = explain_error(&f, &r);
	assert_non_null(strstr(c->summary, "cudaMalloc failed 6 times (all of 6 calls), cudaMemcpy 5 times (83 % of 6 "
					   "calls), cudaLaunchKernel 4 times (67 % of 6 calls), cudaStreamSynchronize "
					   "3 times (50 % of 6 calls), 2 more ops 3 times, "));
	cw_explain_result_free(&r);
	destroy(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_ops_own_counts),
		cmocka_unit_test(test_many_ops_one_clause),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
