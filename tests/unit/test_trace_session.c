/* trace's start-up (trace/session.c, trace/start.c) and its exit status
 * (cmd/cmd_trace.c): the step runner with one step replaced by a failing
 * stub stops there, says why once, and the command exits non-zero with
 * that step's code; steps that cannot be made to fail from outside
 * (allocations, the pipeline, threads) are covered here. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cmd/cmd.h"
#include "cmd/cmd_trace.h"
#include "trace/session.h"

static int nerrors, nlines;
static char said[1024];

static void on_line(void *ctx, const char *text)
{
	(void)ctx, (void)text;
	nlines++;
}

static void on_error(void *ctx, const char *text)
{
	(void)ctx;
	nerrors++;
	snprintf(said, sizeof(said), "%s", text);
}

static int step_ok(struct trace *t, char *err, size_t errlen)
{
	(void)t, (void)err, (void)errlen;
	return 0;
}

static int stub_rc;

static int step_fail(struct trace *t, char *err, size_t errlen)
{
	(void)t, (void)err, (void)errlen;
	return stub_rc;
}

/* A hook that failed has said why itself and gives its exit status. */
static int step_hook_fail(struct trace *t, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	t->hook_exit = CW_EXIT_USAGE;
	return -ECANCELED;
}

/* Runs the real start-up table with every step a no-op but id, which
 * runs stub; returns the runner's result, res filled, the session ended. */
static int run_with(int id, int (*stub)(struct trace *, char *, size_t), struct cw_trace_result *res)
{
	struct trace_step steps[64];
	struct cw_trace_opts o;
	struct trace *t;
	int i, rc, found = 0;

	assert_true(trace_nstart_steps <= 64);
	for (i = 0; i < trace_nstart_steps; i++) {
		steps[i] = trace_start_steps[i];
		steps[i].run = steps[i].id == id ? stub : step_ok;
		found += steps[i].id == id;
	}
	assert_int_equal(found, id == CW_TRACE_RAN ? 0 : 1);
	memset(&o, 0, sizeof(o));
	o.json_fd = -1;
	o.say = (struct cw_trace_sink){ on_line, on_error, NULL };
	memset(res, 0, sizeof(*res));
	nerrors = nlines = 0;
	said[0] = '\0';
	t = trace_session_new(&o, NULL);
	assert_non_null(t);
	rc = trace_steps_run(t, steps, trace_nstart_steps, res);
	trace_session_end(t, res);
	return rc;
}

/* One step failing with rc: the runner stops, one line says want, the
 * command exits code. */
static void expect(int id, int rc, const char *want, int code)
{
	struct cw_trace_result res;

	stub_rc = rc;
	assert_int_equal(run_with(id, step_fail, &res), -1);
	assert_int_equal(res.step, id);
	assert_int_equal(res.err, rc);
	assert_int_equal(nerrors, 1);
	if (!strstr(said, want))
		fail_msg("step %d said \"%s\", want \"%s\"", id, said, want);
	assert_int_equal(cmd_trace_exit_code(&res), code);
}

struct failure {
	int id, rc;
	const char *want;
	int code;
};

static void expect_all(const struct failure *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		expect(f[i].id, f[i].rc, f[i].want, f[i].code);
}

static void test_seven_steps(void **state)
{
	static const struct failure f[] = {
		{ CW_TRACE_PYTHON, -EINVAL, "cannot set up Python stack capture: Invalid argument", CW_EXIT_NOFEATURE },
		{ CW_TRACE_PYTHON, -ENOMEM, "cannot set up Python stack capture: Cannot allocate memory", CW_EXIT_FAIL },
		{ CW_TRACE_PIPELINE, -ENOMEM, "cannot start the pipeline: Cannot allocate memory", CW_EXIT_FAIL },
		{ CW_TRACE_RINGS, -EIO, "cannot read the ring buffers", CW_EXIT_FAIL },
		{ CW_TRACE_RINGS, -EPERM, "cannot read the ring buffers", CW_EXIT_NOPERM },
		{ CW_TRACE_METRICS, -ENOMEM, "out of memory", CW_EXIT_FAIL },
		{ CW_TRACE_WRITER_LAG, -ENOMEM, "out of memory", CW_EXIT_FAIL },
		{ CW_TRACE_GPU, -ENOMEM, "cannot start GPU telemetry: Cannot allocate memory", CW_EXIT_FAIL },
		{ CW_TRACE_GPU, -EIO, "cannot start GPU telemetry: Input/output error", CW_EXIT_FAIL },
		{ CW_TRACE_RESOLVER, -EAGAIN, "cannot start the cgroup resolver: Resource temporarily unavailable",
		  CW_EXIT_FAIL },
	};

	(void)state;
	expect_all(f, sizeof(f) / sizeof(f[0]));
}

/* The steps that were right before keep their codes. */
static void test_other_steps(void **state)
{
	static const struct failure f[] = {
		{ CW_TRACE_BPF_STATS, -EINVAL, "trace: cannot enable BPF statistics: Invalid argument",
		  CW_EXIT_NOFEATURE },
		{ CW_TRACE_KERNEL_PROBES, -EPERM, "cannot start tracing", CW_EXIT_NOPERM },
		{ CW_TRACE_KERNEL_PROBES, -ENOENT, "cannot start tracing", CW_EXIT_NOFEATURE },
		{ CW_TRACE_KERNEL_PROBES, -EINVAL, "cannot start tracing", CW_EXIT_FAIL },
		{ CW_TRACE_CUDA_PROBES, -EINVAL, "cannot start tracing", CW_EXIT_NOFEATURE },
		{ CW_TRACE_STORE, -EIO, "cannot start tracing", CW_EXIT_DB },
		{ CW_TRACE_WRITER, -EIO, "cannot start tracing", CW_EXIT_DB },
		{ CW_TRACE_ATTACH, -ENOENT, "cannot start tracing", CW_EXIT_NOTARGET },
		{ CW_TRACE_SPAWN, -ENOENT, "cannot start tracing", CW_EXIT_FAIL },
	};

	(void)state;
	expect_all(f, sizeof(f) / sizeof(f[0]));
}

/* Whichever step fails, the command exits non-zero having said why once
 * (a hook's failure is said by the hook, and its status is the exit's). */
static void test_every_step(void **state)
{
	struct cw_trace_result res;
	int i;

	(void)state;
	for (i = 0; i < trace_nstart_steps; i++) {
		int id = trace_start_steps[i].id;

		stub_rc = -EIO;
		assert_int_equal(run_with(id, step_fail, &res), -1);
		assert_int_equal(nerrors, 1);
		assert_int_not_equal(cmd_trace_exit_code(&res), CW_EXIT_OK);
		if (id != CW_TRACE_OTLP && id != CW_TRACE_SERVE)
			continue;
		assert_int_equal(run_with(id, step_hook_fail, &res), -1);
		assert_int_equal(nerrors, 0);
		assert_int_equal(cmd_trace_exit_code(&res), CW_EXIT_USAGE);
	}
}

static void test_no_failure(void **state)
{
	struct cw_trace_result res;

	(void)state;
	assert_int_equal(run_with(CW_TRACE_RAN, step_fail, &res), 0);
	assert_int_equal(res.step, CW_TRACE_RAN);
	assert_int_equal(nerrors, 0);
	assert_int_equal(cmd_trace_exit_code(&res), CW_EXIT_OK);
}

/* How a run that ran ends: the store first, then the command's status,
 * then the writer's last batch. */
static void test_run_end(void **state)
{
	struct cw_trace_result r;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.store_failed = 1;
	r.child_done = 1;
	r.child_status = 3 << 8;
	assert_int_equal(cmd_trace_exit_code(&r), CW_EXIT_DB);
	r.store_failed = 0;
	assert_int_equal(cmd_trace_exit_code(&r), 3);
	r.writer_failed = 1;
	assert_int_equal(cmd_trace_exit_code(&r), 3);
	r.child_status = 0;
	assert_int_equal(cmd_trace_exit_code(&r), CW_EXIT_DB);
	r.child_status = SIGTERM; /* killed */
	assert_int_equal(cmd_trace_exit_code(&r), 128 + SIGTERM);
	r.child_done = 0;
	r.lock_failed = 1;
	assert_int_equal(cmd_trace_exit_code(&r), CW_EXIT_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seven_steps),
		cmocka_unit_test(test_other_steps),
		cmocka_unit_test(test_every_step),
		cmocka_unit_test(test_no_failure),
		cmocka_unit_test(test_run_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
