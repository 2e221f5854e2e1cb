/* _Py_DebugOffsets as the real interpreters ship it (3.13.0, Debian's
 * 3.14.10 and 3.15.2, recorded) gives the offsets gdb and CPython's own
 * headers give; the same bytes altered (an unknown minor, a prerelease whose
 * blocks are shorter, a free-threaded flag, wild sizes, offsets outside
 * their struct, a runtime size that is not the symbol's) are refused with
 * the version named. Then a 3.14 frame chain over fake memory: tagged
 * executables, the interpreter's entry frame (owner 3, None executable) and
 * a C-stack shim (owner 4, shim code), and a cycle. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "pyframe/framewalk.h"
#include "pyframe/offsets.h"
#include "py_debug_offsets_recorded.h"

static int parse(const uint8_t *b, size_t len, uint64_t rsize, struct cw_py_offsets *o, char *why, size_t wl)
{
	uint32_t hex;

	return cw_py_offsets_debug_parse(b, len, rsize, o, &hex, why, wl);
}

static void test_recorded(void **state)
{
	struct cw_py_offsets o;
	char why[256];

	(void)state;
	assert_int_equal(parse(py313_debug_offsets, sizeof(py313_debug_offsets), PY313_RUNTIME_SIZE, &o, why,
			       sizeof(why)), 0);
	assert_int_equal(o.minor, 13);
	assert_int_equal(o.version_hex, 0x030d00f0);
	assert_int_equal(o.ts_frame, 0x48);
	assert_int_equal(o.ts_native_thread_id, 0xa0);
	assert_int_equal(o.fr_lasti, 0x38);
	assert_int_equal(o.fr_owner, 0x46);
	assert_int_equal(o.co_code_adaptive, 0xc8);
	assert_true(o.code_mask == ~0ull);

	assert_int_equal(parse(py314_debug_offsets, sizeof(py314_debug_offsets), PY314_RUNTIME_SIZE, &o, why,
			       sizeof(why)), 0);
	assert_int_equal(o.minor, 14);
	assert_int_equal(o.version_hex, 0x030e0af0);
	assert_int_equal(o.rt_interp_head, 0x328);
	assert_int_equal(o.is_threads_head, 0x1cb0);
	assert_int_equal(o.ts_frame, 0x48);
	assert_int_equal(o.ts_thread_id, 0x98);
	assert_int_equal(o.ts_native_thread_id, 0xa0);
	assert_int_equal(o.fr_back, 8);
	assert_int_equal(o.fr_code, 0);
	assert_int_equal(o.fr_lasti, 0x38);
	assert_int_equal(o.fr_owner, 0x4a);
	assert_int_equal(o.co_firstlineno, 0x44);
	assert_int_equal(o.co_linetable, 0x88);
	assert_int_equal(o.co_code_adaptive, 0xd0);
	assert_int_equal(o.ascii_size, 40);
	assert_true(o.code_mask == ~7ull);

	assert_int_equal(parse(py315_debug_offsets, sizeof(py315_debug_offsets), PY315_RUNTIME_SIZE, &o, why,
			       sizeof(why)), 0);
	assert_int_equal(o.minor, 15);
	assert_int_equal(o.version_hex, 0x030f02f0);
	assert_int_equal(o.rt_interp_head, 0x3a8);
	assert_int_equal(o.is_threads_head, 0x1ca8);
	assert_int_equal(o.ts_frame, 0x48);
	assert_int_equal(o.ts_thread_id, 0xb0);
	assert_int_equal(o.ts_native_thread_id, 0xb8);
	assert_int_equal(o.fr_owner, 0x4a);
	assert_int_equal(o.co_qualname, 0x80);
	assert_int_equal(o.co_code_adaptive, 0xd0);
	assert_int_equal(o.tp_name, 0x18);
	assert_int_equal(o.bytes_sval, 0x20);
	assert_true(o.code_mask == ~7ull);
}

static uint8_t buf[1024];

static void set_word(int i, uint64_t v) { memcpy(buf + 8 + 8 * i, &v, 8); }

static void expect_refused(int err, const char *why, int want_err, const char *want_text)
{
	assert_int_equal(err, want_err);
	if (!strstr(why, want_text))
		fail_msg("reason \"%s\" lacks \"%s\"", why, want_text);
}

static void test_refusals(void **state)
{
	struct cw_py_offsets o;
	char why[256];
	int err;

	(void)state;
	/* the symbol's size must be the structure's runtime size */
	err = parse(py314_debug_offsets, sizeof(buf), PY314_RUNTIME_SIZE + 8, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "python 3.14.10: _Py_DebugOffsets failed validation (runtime size");

	/* a minor with no known layout */
	memcpy(buf, py315_debug_offsets, sizeof(buf));
	set_word(0, 0x031000f0);
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -ENOTSUP, "python 3.16.0 is not supported");

	/* a 3.15 alpha that lacks the three thread-state words 3.15.2 has */
	memcpy(buf, py315_debug_offsets, sizeof(buf));
	memmove(buf + 8 + 8 * 26, buf + 8 + 8 * 29, sizeof(buf) - (8 + 8 * 29));
	set_word(0, 0x030f00a1);
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "python 3.15.0a1: _Py_DebugOffsets failed validation");
	/* a release candidate with the final layout is read */
	memcpy(buf, py314_debug_offsets, sizeof(buf));
	set_word(0, 0x030e00c1);
	assert_int_equal(parse(buf, sizeof(buf), 0, &o, why, sizeof(why)), 0);

	/* a free-threaded flag on a default build's header: its object
	 * headers are not the free-threaded ones (test_free_threaded.c
	 * reads real free-threaded layouts) */
	memcpy(buf, py314_debug_offsets, sizeof(buf));
	set_word(1, 1);
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "PyObject size is 16, expected 32");
	set_word(1, 0x4141414141414141ull);
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "free_threaded is");

	/* wild struct size, offset outside its struct, huge offsets */
	memcpy(buf, py314_debug_offsets, sizeof(buf));
	set_word(30, 1ull << 40); /* frame size */
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "frame instr_ptr: struct size");
	memcpy(buf, py314_debug_offsets, sizeof(buf));
	set_word(27, 0x340); /* native_thread_id == thread state size */
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "thread native_thread_id: offset 832 outside a struct of 832 bytes");
	memcpy(buf, py314_debug_offsets, sizeof(buf));
	set_word(4, UINT64_MAX - 3); /* interpreters_head: no wrap-around */
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "runtime interpreters_head");
	memcpy(buf, py314_debug_offsets, sizeof(buf));
	set_word(50, 16); /* ob_type moved: an anchor */
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "PyObject ob_type is 16, expected 8");

	/* not CPython 3, no cookie, truncated */
	memcpy(buf, py314_debug_offsets, sizeof(buf));
	set_word(0, 0x020712f0);
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "not a CPython 3 version");
	buf[0] = 'X';
	err = parse(buf, sizeof(buf), 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "cookie");
	err = parse(py315_debug_offsets, 200, 0, &o, why, sizeof(why));
	expect_refused(err, why, -EPROTO, "python 3.15.2: _Py_DebugOffsets truncated");
}

/* fake 3.14 process memory */
#define BASE 0x200000ull
#define SIZE 0x10000u
static uint8_t mem[SIZE];

static int fake_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr + len > BASE + SIZE)
		return -EFAULT;
	memcpy(dst, mem + (addr - BASE), len);
	return 0;
}

static void put64(uint64_t a, uint64_t v) { memcpy(mem + (a - BASE), &v, 8); }

#define RT BASE
#define INTERP (BASE + 0x1000)
#define TS (BASE + 0x3000)
#define FR(i) (BASE + 0x4000 + 0x100 * (i))
#define CODE(i) (BASE + 0x6000 + 0x400 * (i))
#define NONE_OBJ (BASE + 0x8000)
#define CODETYPE (BASE + 0x9000)
#define NONETYPE (BASE + 0x9400)
#define NAMES (BASE + 0x9800)

static void test_walk_314(void **state)
{
	struct cw_py_proc p;
	struct cw_py_thread th[4];
	struct cw_py_frame fr[8];
	uint32_t hex;
	int n, trunc;
	const struct cw_py_offsets *o = &p.off;

	(void)state;
	memset(mem, 0, sizeof(mem));
	memset(&p, 0, sizeof(p));
	p.mem.read = fake_read;
	p.runtime = RT;
	p.pthread_tid_off = -1;
	memcpy(mem, py314_debug_offsets, 8 + 80 * 8);
	assert_int_equal(cw_py_offsets_debug(&p.mem, RT, 0, &p.off, &hex, NULL, 0), 0);
	memcpy(mem + (NAMES - BASE), "code\0NoneType", 14);
	put64(CODETYPE + o->tp_name, NAMES);
	put64(NONETYPE + o->tp_name, NAMES + 5);
	put64(NONE_OBJ + o->ob_type, NONETYPE);
	put64(RT + o->rt_interp_head, INTERP);
	put64(INTERP + o->is_threads_head, TS);
	put64(TS + o->ts_interp, INTERP);
	put64(TS + (uint32_t)o->ts_native_thread_id, 4242);
	put64(TS + o->ts_frame, FR(0));
	/* FR0: a C-stack shim (owner 4, shim code) -> FR1: code 1, tagged ->
	 * FR2: the entry frame (owner 3, None, tagged) -> FR3: code 2 */
	mem[FR(0) - BASE + o->fr_owner] = 4;
	put64(FR(0) + o->fr_code, CODE(3) | 1);
	put64(FR(0) + o->fr_back, FR(1));
	put64(FR(1) + o->fr_code, CODE(1) | 1);
	put64(FR(1) + o->fr_lasti, CODE(1) + o->co_code_adaptive + 2 * 5);
	put64(FR(1) + o->fr_back, FR(2));
	mem[FR(2) - BASE + o->fr_owner] = 3;
	put64(FR(2) + o->fr_code, NONE_OBJ | 1);
	put64(FR(2) + o->fr_back, FR(3));
	put64(FR(3) + o->fr_code, CODE(2));
	put64(FR(3) + o->fr_lasti, CODE(2) + o->co_code_adaptive + 2 * 11);
	put64(CODE(1) + o->ob_type, CODETYPE);
	put64(CODE(2) + o->ob_type, CODETYPE);
	put64(CODE(3) + o->ob_type, CODETYPE);

	assert_int_equal(cw_py_proc_validate(&p), 0);
	n = cw_py_threads(&p, th, 4);
	assert_int_equal(n, 1);
	assert_int_equal(th[0].tid, 4242);
	assert_int_equal(th[0].frame, FR(0));
	n = cw_py_walk(&p, th[0].frame, fr, 8, &trunc);
	assert_int_equal(n, 2);
	assert_int_equal(trunc, 0);
	assert_true(fr[0].code == CODE(1));
	assert_int_equal(fr[0].lasti, 5);
	assert_true(fr[1].code == CODE(2));
	assert_int_equal(fr[1].lasti, 11);

	/* a cycle back to the first frame ends the walk with what was found */
	put64(FR(3) + o->fr_back, FR(0));
	n = cw_py_walk(&p, th[0].frame, fr, 8, &trunc);
	assert_int_equal(n, 2);
	/* a thread list that loops onto itself is listed once */
	put64(TS + o->ts_next, TS);
	assert_int_equal(cw_py_threads(&p, th, 4), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_walk_314),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
