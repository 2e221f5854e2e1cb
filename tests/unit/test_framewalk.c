/* The frame walker and object readers over fake memory laid out like a
 * CPython 3.11 process (offsets from the built-in table): a runtime, an
 * interpreter, two thread states, a chain of frames, code objects, str and
 * bytes objects. Then the same memory corrupted: cycles, wild pointers,
 * huge lengths, non-code objects. Errors, never crashes or loops. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pyframe/framewalk.h"
#include "pyframe/linetable.h"
#include "pyframe/pycode.h"

#define BASE 0x100000ull
#define SIZE 0x10000u

static uint8_t mem[SIZE];
static int reads;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (addr < BASE || addr + len > BASE + SIZE)
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put64(uint64_t addr, uint64_t v) { memcpy(mem + (addr - BASE), &v, 8); }
static void put32(uint64_t addr, uint32_t v) { memcpy(mem + (addr - BASE), &v, 4); }

/* addresses of the fake objects */
#define RT (BASE + 0x0)
#define INTERP (BASE + 0x400)
#define TS1 (BASE + 0x800)
#define TS2 (BASE + 0xc00)
#define CFRAME1 (BASE + 0x1000)
#define FR(i) (BASE + 0x2000 + 0x100 * (i))
#define CODE(i) (BASE + 0x4000 + 0x400 * (i))
#define STR(i) (BASE + 0x8000 + 0x100 * (i))
#define LT(i) (BASE + 0xa000 + 0x100 * (i))
#define CODETYPE (BASE + 0xe000)
#define TYPENAME (BASE + 0xe100)
#define OTHERTYPE (BASE + 0xe200)
#define OTHERNAME (BASE + 0xe300)

static struct cw_py_proc proc;

static void mkstr(uint64_t at, const char *s)
{
	const struct cw_py_offsets *o = &proc.off;

	put64(at + o->ob_type, OTHERTYPE);
	put64(at + o->unicode_length, strlen(s));
	put32(at + o->unicode_state, (1u << 2) | (1u << 5) | (1u << 6)); /* kind 1, compact, ascii */
	memcpy(mem + (at - BASE) + o->ascii_size, s, strlen(s) + 1);
}

/* code object i: "fn<i>" in "file<i>.py", first line 10*i, and a
 * location table of four NO_COLUMNS entries of 8 units each */
static void mkcode(int i)
{
	const struct cw_py_offsets *o = &proc.off;
	char name[32];
	uint8_t *lt;

	put64(CODE(i) + o->ob_type, CODETYPE);
	snprintf(name, sizeof(name), "file%d.py", i);
	mkstr(STR(2 * i), name);
	snprintf(name, sizeof(name), "fn%d", i);
	mkstr(STR(2 * i + 1), name);
	put64(CODE(i) + o->co_filename, STR(2 * i));
	put64(CODE(i) + o->co_name, STR(2 * i + 1));
	put64(CODE(i) + o->co_qualname, STR(2 * i + 1));
	put32(CODE(i) + o->co_firstlineno, 10u * (uint32_t)i);
	put64(CODE(i) + o->co_linetable, LT(i));
	put64(LT(i) + o->ob_type, OTHERTYPE);
	put64(LT(i) + o->var_size, 8);
	lt = mem + (LT(i) - BASE) + o->bytes_sval;
	/* entries: NO_COLUMNS over 8 units, Δline +i then +1 each (svarint 2x) */
	for (int k = 0; k < 4; k++) {
		lt[2 * k] = 0x80 | (13 << 3) | 7;
		lt[2 * k + 1] = (uint8_t)(2 * (k == 0 ? i : 1));
	}
}

static void setup_fake(void)
{
	const struct cw_py_offsets *o;

	memset(mem, 0, sizeof(mem));
	memset(&proc, 0, sizeof(proc));
	proc.mem.read = fake_read;
	proc.pthread_tid_off = -1;
	assert_int_equal(cw_py_offsets_builtin(11, &proc.off), 0);
	o = &proc.off;
	proc.runtime = RT;
	put64(TYPENAME, 0x65646f63); /* "code\0" */
	put64(OTHERNAME, 0x72747300); /* "\0str" */
	put64(CODETYPE + o->tp_name, TYPENAME);
	put64(OTHERTYPE + o->tp_name, OTHERNAME);
	put64(RT + o->rt_interp_head, INTERP);
	put64(INTERP + o->is_threads_head, TS1);
	put64(TS1 + o->ts_interp, INTERP);
	put64(TS1 + o->ts_next, TS2);
	put64(TS1 + (uint32_t)o->ts_native_thread_id, 1001);
	put64(TS1 + o->ts_frame, CFRAME1);
	put64(CFRAME1 + (uint32_t)o->cframe_current, FR(0));
	put64(TS2 + o->ts_interp, INTERP);
	put64(TS2 + (uint32_t)o->ts_native_thread_id, 1002); /* idle: no cframe */
	/* frames 0 -> 1 -> 2, code 1, 2, 3; lasti 9, 17, 0 (units) */
	for (int i = 0; i < 3; i++) {
		mkcode(i + 1);
		put64(FR(i) + o->fr_code, CODE(i + 1));
		put64(FR(i) + o->fr_back, i < 2 ? FR(i + 1) : 0);
		put64(FR(i) + o->fr_lasti, CODE(i + 1) + o->co_code_adaptive + 2u * (uint32_t[]){ 9, 17, 0 }[i]);
	}
}

static void test_threads_and_walk(void **state)
{
	struct cw_py_thread th[8];
	struct cw_py_frame fr[8];
	int n, trunc;

	(void)state;
	setup_fake();
	assert_int_equal(cw_py_proc_validate(&proc), 0);
	n = cw_py_threads(&proc, th, 8);
	assert_int_equal(n, 2);
	assert_int_equal(th[0].tid, 1001);
	assert_int_equal(th[0].frame, FR(0));
	assert_int_equal(th[1].tid, 1002);
	assert_int_equal(th[1].frame, 0);
	n = cw_py_walk(&proc, th[0].frame, fr, 8, &trunc);
	assert_int_equal(n, 3);
	assert_int_equal(trunc, 0);
	assert_int_equal(fr[0].code, CODE(1));
	assert_int_equal(fr[0].lasti, 9);
	assert_int_equal(fr[1].lasti, 17);
	assert_int_equal(fr[2].lasti, 0);
	/* max smaller than the chain: truncated */
	n = cw_py_walk(&proc, th[0].frame, fr, 2, &trunc);
	assert_int_equal(n, 2);
	assert_int_equal(trunc, 1);
}

static void test_code_and_line(void **state)
{
	struct cw_py_code c;
	int line;

	(void)state;
	setup_fake();
	assert_int_equal(cw_py_code_read(&proc, CODE(2), &c), 0);
	assert_string_equal(c.file, "file2.py");
	assert_string_equal(c.function, "fn2");
	assert_int_equal(c.fp.firstlineno, 20);
	assert_int_equal(c.linetable_len, 8);
	/* units 0-7 at 20+2, 8-15 at 23, 16-23 at 24 */
	line = cw_linetable_line(11, c.linetable, c.linetable_len, c.fp.firstlineno, 17);
	assert_int_equal(line, 24);
	cw_py_code_release(&c);
	assert_int_equal(cw_py_is_code(&proc, CODE(1)), 1);
	assert_int_equal(proc.code_type, CODETYPE);
	assert_int_equal(cw_py_is_code(&proc, STR(0)), 0);
}

static void test_cycles(void **state)
{
	struct cw_py_thread th[8];
	struct cw_py_frame fr[CW_PY_WALK_MAX];
	int n, trunc;

	(void)state;
	setup_fake();
	put64(FR(2) + proc.off.fr_back, FR(0)); /* frame cycle */
	n = cw_py_walk(&proc, FR(0), fr, CW_PY_WALK_MAX, &trunc);
	assert_int_equal(n, 3);
	put64(FR(0) + proc.off.fr_back, FR(0)); /* self loop */
	n = cw_py_walk(&proc, FR(0), fr, CW_PY_WALK_MAX, &trunc);
	assert_int_equal(n, 1);
	put64(TS2 + proc.off.ts_next, TS1); /* thread list cycle */
	n = cw_py_threads(&proc, th, 8);
	assert_int_equal(n, 2);
}

static void test_corrupt_pointers(void **state)
{
	struct cw_py_frame fr[8];
	struct cw_py_code c;
	struct cw_py_thread th[8];
	int n, trunc;

	(void)state;
	setup_fake();
	/* wild back pointer: the walk keeps what it has */
	put64(FR(1) + proc.off.fr_back, 0xdead0000beefull);
	n = cw_py_walk(&proc, FR(0), fr, 8, &trunc);
	assert_int_equal(n, 2);
	/* a frame that reads well but sits at a misaligned address: refused */
	put64(FR(5) + 4 + proc.off.fr_code, CODE(1));
	put64(FR(5) + 4 + proc.off.fr_back, 0);
	put64(FR(5) + 4 + proc.off.fr_lasti, CODE(1) + proc.off.co_code_adaptive);
	assert_int_equal(cw_py_walk(&proc, FR(5) + 4, fr, 8, &trunc), -EFAULT);
	put64(FR(1) + proc.off.fr_back, FR(5) + 4);
	assert_int_equal(cw_py_walk(&proc, FR(0), fr, 8, &trunc), 2);
	put64(FR(1) + proc.off.fr_back, 0xdead0000beefull);
	/* misaligned, kernel-half and NULL-page starts */
	assert_true(cw_py_walk(&proc, FR(0) + 3, fr, 8, &trunc) < 0);
	assert_true(cw_py_walk(&proc, 0xffff888000000000ull, fr, 8, &trunc) < 0);
	assert_true(cw_py_walk(&proc, 0x10, fr, 8, &trunc) < 0);
	/* a frame whose code is not a code object is skipped (3.13 f_executable) */
	setup_fake();
	put64(FR(1) + proc.off.fr_code, STR(0));
	n = cw_py_walk(&proc, FR(0), fr, 8, &trunc);
	assert_int_equal(n, 2);
	assert_int_equal(fr[1].code, CODE(3));
	/* instruction pointer far past the code: rejected */
	put64(FR(0) + proc.off.fr_lasti, CODE(1) + (1ull << 30));
	assert_true(cw_py_walk(&proc, FR(0), fr, 8, &trunc) < 0);
	/* a thread state that does not point back to its interpreter */
	setup_fake();
	put64(TS1 + proc.off.ts_interp, TS1);
	assert_int_equal(cw_py_proc_validate(&proc), -EPROTO);
	assert_true(cw_py_threads(&proc, th, 8) < 0);
	/* huge and negative sizes */
	setup_fake();
	put64(LT(1) + proc.off.var_size, 1ull << 40);
	assert_int_equal(cw_py_code_read(&proc, CODE(1), &c), -E2BIG);
	put64(LT(1) + proc.off.var_size, (uint64_t)-5);
	assert_int_equal(cw_py_code_read(&proc, CODE(1), &c), -EINVAL);
	setup_fake();
	put64(STR(2) + proc.off.unicode_length, 1ull << 40);
	assert_int_equal(cw_py_code_read(&proc, CODE(1), &c), -EINVAL);
	setup_fake();
	put32(STR(2) + proc.off.unicode_state, 0); /* not compact: refused */
	assert_int_equal(cw_py_code_read(&proc, CODE(1), &c), -EINVAL);
	setup_fake();
	put32(CODE(1) + proc.off.co_firstlineno, 0xffffffffu);
	assert_int_equal(cw_py_code_read(&proc, CODE(1), &c), -EINVAL);
}

static void test_non_ascii_names(void **state)
{
	char buf[64];
	uint64_t at = STR(40);
	const uint16_t s[] = { 0x3b1, 0x3b2 }; /* "αβ", UCS-2 */

	(void)state;
	setup_fake();
	put64(at + proc.off.unicode_length, 2);
	put32(at + proc.off.unicode_state, (2u << 2) | (1u << 5)); /* kind 2, compact, not ascii */
	memcpy(mem + (at - BASE) + proc.off.ascii_size + 24, s, sizeof(s));
	assert_int_equal(cw_py_read_str(&proc, at, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "\xce\xb1\xce\xb2");
	/* truncation at a character boundary */
	assert_int_equal(cw_py_read_str(&proc, at, buf, 4), 0);
	assert_string_equal(buf, "\xce\xb1");
}

/* A CPython 3.10 process: tstate->frame points straight at a
 * PyFrameObject, f_lasti is an int counting code units (-1: not started),
 * the thread id is glibc's pthread tid (pthread_self() + an inferred
 * offset), and co_linetable holds PEP 626 (byte delta, line delta) pairs. */
#define PTHREAD (BASE + 0xd000)
#define PTHREAD_TID_OFF 0x2d0

static void setup_fake310(void)
{
	/* the function starts at line 50: units 0-2 line 51, 3-4 a jump of
	 * 200 split in (0, 127) (4, 73) -> 251, 5-6 no line (-128), 7 -> 252 */
	static const uint8_t lt310[] = { 6, 1, 0, 127, 4, 73, 4, 0x80, 2, 1 };
	const struct cw_py_offsets *o;

	memset(mem, 0, sizeof(mem));
	memset(&proc, 0, sizeof(proc));
	proc.mem.read = fake_read;
	proc.pthread_tid_off = PTHREAD_TID_OFF;
	assert_int_equal(cw_py_offsets_builtin(10, &proc.off), 0);
	o = &proc.off;
	assert_int_equal(o->frame_kind, CW_PY_FRAME_OBJECT);
	proc.runtime = RT;
	put64(TYPENAME, 0x65646f63);
	put64(OTHERNAME, 0x72747300);
	put64(CODETYPE + o->tp_name, TYPENAME);
	put64(OTHERTYPE + o->tp_name, OTHERNAME);
	put64(RT + o->rt_interp_head, INTERP);
	put64(INTERP + o->is_threads_head, TS1);
	put64(TS1 + o->ts_interp, INTERP);
	put64(TS1 + o->ts_thread_id, PTHREAD);
	put64(PTHREAD, 0x1234); /* glibc's header, not the tid */
	put32(PTHREAD + PTHREAD_TID_OFF, 2001);
	put64(TS1 + o->ts_frame, FR(0));
	/* frames 0 -> 1 -> 2 on code 1, 2, 3 with f_lasti 3, 5, -1 */
	for (int i = 0; i < 3; i++) {
		int c = i + 1;
		char name[32];

		put64(CODE(c) + o->ob_type, CODETYPE);
		snprintf(name, sizeof(name), "file%d.py", c);
		mkstr(STR(2 * c), name);
		snprintf(name, sizeof(name), "fn%d", c);
		mkstr(STR(2 * c + 1), name);
		put64(CODE(c) + o->co_filename, STR(2 * c));
		put64(CODE(c) + o->co_name, STR(2 * c + 1));
		put32(CODE(c) + o->co_firstlineno, 50);
		put64(CODE(c) + o->co_linetable, LT(c));
		put64(LT(c) + o->ob_type, OTHERTYPE);
		put64(LT(c) + o->var_size, sizeof(lt310));
		memcpy(mem + (LT(c) - BASE) + o->bytes_sval, lt310, sizeof(lt310));
		put64(FR(i) + o->fr_code, CODE(c));
		put64(FR(i) + o->fr_back, i < 2 ? FR(i + 1) : 0);
		put32(FR(i) + o->fr_lasti, (uint32_t)(int32_t[]){ 3, 5, -1 }[i]);
	}
}

static void test_310_frames_and_lines(void **state)
{
	struct cw_py_thread th[4];
	struct cw_py_frame fr[8];
	struct cw_py_code c;
	int n, trunc;
	const int want[3] = { 251, 0, 50 }; /* a frame not started: its first line */

	(void)state;
	setup_fake310();
	assert_int_equal(cw_py_proc_validate(&proc), 0);
	n = cw_py_threads(&proc, th, 4);
	assert_int_equal(n, 1);
	assert_int_equal(th[0].tid, 2001);
	assert_int_equal(th[0].frame, FR(0));
	n = cw_py_walk(&proc, th[0].frame, fr, 8, &trunc);
	assert_int_equal(n, 3);
	assert_int_equal(trunc, 0);
	assert_int_equal(fr[0].lasti, 3);
	assert_int_equal(fr[1].lasti, 5);
	assert_int_equal(fr[2].lasti, UINT32_MAX);
	for (int i = 0; i < 3; i++) {
		int64_t lasti = fr[i].lasti == UINT32_MAX ? -1 : (int64_t)fr[i].lasti;

		assert_int_equal(fr[i].code, CODE(i + 1));
		assert_int_equal(cw_py_code_read(&proc, fr[i].code, &c), 0);
		assert_int_equal(c.fp.firstlineno, 50);
		assert_int_equal(c.linetable_len, 10);
		assert_int_equal(cw_linetable_line(10, c.linetable, c.linetable_len, c.fp.firstlineno, lasti), want[i]);
		cw_py_code_release(&c);
	}
	/* unit 7 of the first frame's code: 252 */
	assert_int_equal(cw_py_code_read(&proc, CODE(1), &c), 0);
	assert_string_equal(c.function, "fn1");
	assert_string_equal(c.file, "file1.py");
	assert_int_equal(cw_linetable_line(10, c.linetable, c.linetable_len, 50, 7), 252);
	cw_py_code_release(&c);
	/* without the pthread tid offset the thread has no tid, but is listed */
	proc.pthread_tid_off = -1;
	n = cw_py_threads(&proc, th, 4);
	assert_int_equal(n, 1);
	assert_int_equal(th[0].tid, 0);
	assert_int_equal(th[0].frame, FR(0));
}

/* 3.11+: a native thread id that cannot be a tid is not reported as one. */
static void test_bad_native_tid(void **state)
{
	struct cw_py_thread th[4];

	(void)state;
	setup_fake();
	put64(TS1 + (uint32_t)proc.off.ts_native_thread_id, (1ull << 31) | 5);
	assert_int_equal(cw_py_threads(&proc, th, 4), 2);
	assert_int_equal(th[0].tid, 0);
	assert_int_equal(th[1].tid, 1002);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_and_walk), cmocka_unit_test(test_code_and_line),
		cmocka_unit_test(test_cycles),           cmocka_unit_test(test_corrupt_pointers),
		cmocka_unit_test(test_non_ascii_names),  cmocka_unit_test(test_310_frames_and_lines),
		cmocka_unit_test(test_bad_native_tid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
