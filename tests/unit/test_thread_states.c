/* Blocking kinds (docs/rules.md "Blocking kinds"): what trace reads of a
 * live thread (gpu/threadstate.h, its wait class) becomes the kind the
 * chains name (analysis/thread_states.h), through the stored detail JSON
 * the way trace writes it (trace/gpu.c). The threads are real: one blocked
 * in pthread_mutex_lock on a held mutex, one in read() on an empty pipe. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "analysis/thread_states.h"
#include "gpu/threadstate.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile pid_t tid_lock, tid_pipe;

static void *locker(void *a)
{
	(void)a;
	tid_lock = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *reader(void *a)
{
	char c;

	(void)a;
	tid_pipe = (pid_t)syscall(SYS_gettid);
	if (read(pipefd[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

/* The stored form of one thread, as trace/gpu.c writes it. */
static json_t *stored(const struct cw_thread_state *t)
{
	return json_pack("{s:i, s:s, s:s#, s:s, s:I}", "tid", t->tid, "comm", t->comm, "state", &t->state, 1, "wait",
			 t->wait, "syscall", (json_int_t)t->syscall);
}

static void test_live_waits_to_kinds(void **state)
{
	static struct cw_thread_state th[CW_THREADSTATE_MAX];
	struct cw_chain_thread out[4];
	pthread_t a, b;
	int n = 0, total, got = 0;
	json_t *arr, *detail;

	(void)state;
	if (getenv("CW_QEMU_USER"))
		skip(); /* qemu-user's /proc shows the host's system calls */
	assert_int_equal(pipe(pipefd), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(pthread_create(&a, NULL, locker, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, reader, NULL), 0);
	for (int tries = 0; tries < 300 && got != 2; tries++) {
		usleep(10000);
		n = cw_thread_states(getpid(), th, CW_THREADSTATE_MAX, NULL);
		got = 0;
		for (int i = 0; i < n; i++)
			got += (th[i].tid == tid_lock && !strcmp(th[i].wait, "lock")) ||
			       (th[i].tid == tid_pipe && !strcmp(th[i].wait, "pipe"));
	}
	assert_int_equal(got, 2);
	arr = json_array();
	for (int i = 0; i < n; i++) {
		if (th[i].tid == tid_lock)
			assert_string_equal(cw_blocked_kind(th[i].wait, 0), "futex");
		if (th[i].tid == tid_pipe)
			assert_string_equal(cw_blocked_kind(th[i].wait, 0), "pipe");
		if (th[i].tid == tid_lock || th[i].tid == tid_pipe)
			json_array_append_new(arr, stored(&th[i]));
	}
	detail = json_pack("{s:o}", "threads", arr);
	/* Read back for a chain, the mutex waiter first. */
	assert_int_equal(cw_threads_from_detail(detail, tid_lock, out, 4, &total), 2);
	assert_int_equal(total, 2);
	assert_int_equal(out[0].tid, tid_lock);
	assert_string_equal(out[0].blocked_in, "futex");
	assert_int_equal(out[1].tid, tid_pipe);
	assert_string_equal(out[1].blocked_in, "pipe");
	json_decref(detail);
	pthread_mutex_unlock(&mu);
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* Every wait class trace stores has its kind; runnable depends on
 * starvation; anything else is "other". */
static void test_kind_table(void **state)
{
	static const char *const t[][2] = {
		{"pipe", "pipe"},   {"socket", "socket"}, {"lock", "futex"},          {"disk io", "disk"},
		{"file io", "file"}, {"sleep", "sleep"},   {"poll", "poll"},           {"child", "child"},
		{"gpu driver", "gpu_driver"}, {"cuda call", "cuda_call"}, {"stopped", "stopped"},
		{"exited", "exited"}, {"zzz", "other"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_string_equal(cw_blocked_kind(t[i][0], 0), t[i][1]);
	assert_string_equal(cw_blocked_kind("runnable", 0), "running");
	assert_string_equal(cw_blocked_kind("runnable", 1), "runnable_starved");
	assert_string_equal(cw_blocked_kind(NULL, 0), "other");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_waits_to_kinds),
		cmocka_unit_test(test_kind_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
