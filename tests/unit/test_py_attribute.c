/* The rule that picks the Python thread a native thread's call is
 * attributed to (pyframe/attribute.h): only threads with Python frames that
 * are blocked in futex wait on it; the main thread first, then the lowest
 * TID; a caller with Python frames of its own is never attributed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "pyframe/attribute.h"

static uint32_t blocked_set[8];

static int fake_blocked(uint32_t pid, uint32_t tid)
{
	(void)pid;
	for (int i = 0; i < 8; i++)
		if (blocked_set[i] == tid)
			return 1;
	return 0;
}

static void test_rule(void **state)
{
	struct cw_py_thread th[4] = {
		{ .tid = 102, .frame = 0x1000 }, /* a worker */
		{ .tid = 105, .frame = 0x2000 }, /* the main thread (tid == pid), not the lowest TID */
		{ .tid = 101, .frame = 0x3000 },
		{ .tid = 103, .frame = 0 },      /* a Python thread with no frame */
	};

	(void)state;
	/* nobody blocked: nothing attributed */
	assert_int_equal(cw_py_waiting_thread(105, 200, th, 4, fake_blocked), -1);
	/* two workers blocked: the lowest TID */
	blocked_set[0] = 102;
	blocked_set[1] = 101;
	assert_int_equal(cw_py_waiting_thread(105, 200, th, 4, fake_blocked), 2);
	/* the main thread blocked too: the main thread */
	blocked_set[2] = 105;
	assert_int_equal(cw_py_waiting_thread(105, 200, th, 4, fake_blocked), 1);
	/* a blocked thread without Python frames never qualifies */
	blocked_set[0] = blocked_set[1] = blocked_set[2] = 0;
	blocked_set[3] = 103;
	assert_int_equal(cw_py_waiting_thread(105, 200, th, 4, fake_blocked), -1);
	/* a caller that runs Python itself is never attributed */
	blocked_set[2] = 105;
	assert_int_equal(cw_py_waiting_thread(105, 101, th, 4, fake_blocked), -2);
	/* this very process's main thread is not blocked in futex now */
	assert_int_equal(cw_py_blocked_in_futex((uint32_t)getpid(), (uint32_t)getpid()), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
