/* Splicing Python frames into native stacks: one Python frame per
 * interpreter frame (3.10), all at the innermost interpreter frame (3.11+,
 * where one C call runs many Python frames), after the native frames when
 * no interpreter frame was captured, and the output cap. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "analysis/stack_render.h"

static struct cw_stack_frame py[3];

static int setup(void **state)
{
	static const char *const fn[] = {"forward", "step", "main"};

	(void)state;
	memset(py, 0, sizeof(py));
	for (int i = 0; i < 3; i++) {
		py[i].is_py = 1;
		py[i].line = 10 * (i + 1);
		snprintf(py[i].file, sizeof(py[i].file), "train.py");
		snprintf(py[i].function, sizeof(py[i].function), "%s", fn[i]);
	}
	return 0;
}

/* The rendered stack as "N|[py] train.py:10 in forward|..." for compact asserts. */
static void render(const char *const *native, int nnative, int npy, int cap, char *buf, size_t len)
{
	struct cw_stack_frame out[CW_STACK_MAX_FRAMES];
	char line[512];
	int n = cw_stack_splice(native, nnative, py, npy, out, cap);
	size_t at = (size_t)snprintf(buf, len, "%d", n);

	for (int i = 0; i < n && at < len; i++) {
		cw_stack_frame_text(&out[i], line, sizeof(line));
		at += (size_t)snprintf(buf + at, len - at, "|%s", line);
	}
}

static void test_one_python_frame_per_interpreter_frame(void **state)
{
	const char *native[] = {"libcudart.so.13!cudaMalloc+0x0", "libffi.so.8!ffi_call+0x5",
				"libpython3.10.so!_PyEval_EvalFrameDefault+0x1a0",
				"libpython3.10.so!_PyEval_EvalFrameDefault+0x220",
				"libpython3.10.so!_PyEval_EvalFrameDefault+0x330", "python3!main+0x10"};
	char buf[2048];

	(void)state;
	render(native, 6, 3, CW_STACK_MAX_FRAMES, buf, sizeof(buf));
	assert_string_equal(buf, "9|libcudart.so.13!cudaMalloc+0x0|libffi.so.8!ffi_call+0x5"
				 "|libpython3.10.so!_PyEval_EvalFrameDefault+0x1a0|[py] train.py:10 in forward"
				 "|libpython3.10.so!_PyEval_EvalFrameDefault+0x220|[py] train.py:20 in step"
				 "|libpython3.10.so!_PyEval_EvalFrameDefault+0x330|[py] train.py:30 in main"
				 "|python3!main+0x10");
}

static void test_python_frames_at_innermost_interpreter_frame(void **state)
{
	const char *native[] = {"libcudart.so.13!cudaMalloc+0x0", "python3.12!_PyEval_EvalFrameDefault+0x99",
				"python3.12!PyEval_EvalCode+0x40", "python3.12!main+0x10"};
	char buf[2048];

	(void)state;
	render(native, 4, 3, CW_STACK_MAX_FRAMES, buf, sizeof(buf));
	assert_string_equal(buf, "7|libcudart.so.13!cudaMalloc+0x0|python3.12!_PyEval_EvalFrameDefault+0x99"
				 "|[py] train.py:10 in forward|[py] train.py:20 in step|[py] train.py:30 in main"
				 "|python3.12!PyEval_EvalCode+0x40|python3.12!main+0x10");
}

static void test_more_interpreter_frames_than_python_frames(void **state)
{
	const char *native[] = {"a!f+0x0", "p!_PyEval_EvalFrameDefault+0x1", "p!_PyEval_EvalFrameDefault+0x2",
				"p!_PyEval_EvalFrameDefault+0x3"};
	char buf[2048];

	(void)state;
	render(native, 4, 2, CW_STACK_MAX_FRAMES, buf, sizeof(buf));
	assert_string_equal(buf, "6|a!f+0x0|p!_PyEval_EvalFrameDefault+0x1|[py] train.py:10 in forward"
				 "|[py] train.py:20 in step|p!_PyEval_EvalFrameDefault+0x2"
				 "|p!_PyEval_EvalFrameDefault+0x3");
}

static void test_no_interpreter_frame_appends(void **state)
{
	const char *native[] = {"libcudart.so.13!cudaMalloc+0x0", "libffi.so.8+0x6f79"};
	char buf[2048];

	(void)state;
	render(native, 2, 3, CW_STACK_MAX_FRAMES, buf, sizeof(buf));
	assert_string_equal(buf, "5|libcudart.so.13!cudaMalloc+0x0|libffi.so.8+0x6f79"
				 "|[py] train.py:10 in forward|[py] train.py:20 in step|[py] train.py:30 in main");
	render(NULL, 0, 2, CW_STACK_MAX_FRAMES, buf, sizeof(buf));
	assert_string_equal(buf, "2|[py] train.py:10 in forward|[py] train.py:20 in step");
	render(native, 2, 0, CW_STACK_MAX_FRAMES, buf, sizeof(buf));
	assert_string_equal(buf, "2|libcudart.so.13!cudaMalloc+0x0|libffi.so.8+0x6f79");
}

static void test_cap_is_respected(void **state)
{
	const char *native[] = {"a!f+0x0", "p!_PyEval_EvalFrameDefault+0x1", "p!_PyEval_EvalFrameDefault+0x2",
				"p!_PyEval_EvalFrameDefault+0x3", "p!main+0x4"};
	char buf[2048];

	(void)state;
	render(native, 5, 3, 4, buf, sizeof(buf));
	assert_string_equal(buf, "4|a!f+0x0|p!_PyEval_EvalFrameDefault+0x1|[py] train.py:10 in forward"
				 "|p!_PyEval_EvalFrameDefault+0x2");
	render(native, 5, 3, 0, buf, sizeof(buf));
	assert_string_equal(buf, "0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_one_python_frame_per_interpreter_frame, setup),
		cmocka_unit_test_setup(test_python_frames_at_innermost_interpreter_frame, setup),
		cmocka_unit_test_setup(test_more_interpreter_frames_than_python_frames, setup),
		cmocka_unit_test_setup(test_no_interpreter_frame_appends, setup),
		cmocka_unit_test_setup(test_cap_is_respected, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
