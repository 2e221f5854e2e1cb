/* Free-threaded CPython (3.14t, 3.15t: Py_GIL_DISABLED) over recorded
 * memory built per CPython 3.14's headers (py_free_threaded.h): the
 * offsets, then two threads (per-thread states, each its own frame chain)
 * running the same function, one from the inline bytecode (tlbc_index 0),
 * one from its thread-local copy (co_tlbc->entries[2]), both resolved to
 * their exact lines through free-threaded str/bytes headers (a str's
 * interned is a whole byte, so kind starts at bit 8) and a tagged
 * f_executable (Py_TAG_DEFERRED: code objects use deferred refcounting);
 * hostile indexes and arrays give "not started", never a wrong line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "pyframe/framewalk.h"
#include "pyframe/linetable.h"
#include "pyframe/offsets.h"
#include "pyframe/pycode.h"
#include "py_free_threaded.h"

static int parse(const uint8_t *b, struct cw_py_offsets *o, char *why, size_t wl)
{
	uint32_t hex;

	return cw_py_offsets_debug_parse(b, 1024, 0, o, &hex, why, wl);
}

static void expect_refused(int err, const char *why, int want_err, const char *want_text)
{
	assert_int_equal(err, want_err);
	if (!strstr(why, want_text))
		fail_msg("reason \"%s\" lacks \"%s\"", why, want_text);
}

static void test_offsets(void **state)
{
	uint8_t b[1024];
	struct cw_py_offsets o;
	char why[256];

	(void)state;
	ft314(b);
	assert_int_equal(parse(b, &o, why, sizeof(why)), 0);
	assert_int_equal(o.free_threaded, 1);
	assert_int_equal(o.fr_tlbc_index, 0x48);
	assert_int_equal(o.co_tlbc, 0xe0);
	assert_int_equal(o.co_code_adaptive, 0xe8);
	assert_int_equal(o.fr_owner, 0x4e);
	assert_int_equal(o.ob_type, 24);
	assert_int_equal(o.co_filename, 0x80);
	assert_int_equal(o.co_firstlineno, 0x54);
	assert_int_equal(o.unicode_state, 0x30);
	assert_int_equal(o.ascii_size, 56);
	assert_int_equal(o.bytes_sval, 0x30);
	assert_int_equal(o.str_kind_shift, 8);
	assert_true(o.code_mask == ~7ull);
	/* thread states are the default build's (PyThreadState is public) */
	assert_int_equal(o.ts_frame, 0x48);
	assert_int_equal(o.ts_native_thread_id, 0xa0);

	ft315(b);
	assert_int_equal(parse(b, &o, why, sizeof(why)), 0);
	assert_int_equal(o.minor, 15);
	assert_int_equal(o.fr_tlbc_index, 0x48);
	assert_int_equal(o.co_tlbc, 0xe0);
	assert_int_equal(o.ts_native_thread_id, 0xb8);

	/* the default build reads no TLBC words and keeps interned:2 */
	assert_int_equal(parse(py314_debug_offsets, &o, why, sizeof(why)), 0);
	assert_int_equal(o.free_threaded, 0);
	assert_int_equal(o.fr_tlbc_index, -1);
	assert_int_equal(o.str_kind_shift, 2);

	/* a free-threaded flag on a default-build header: the anchors fail */
	memcpy(b, py314_debug_offsets, sizeof(b));
	ft_set_word(b, 1, 1);
	expect_refused(parse(b, &o, why, sizeof(why)), why, -EPROTO, "PyObject size is 16, expected 32");
	/* and a default flag on a free-threaded header */
	ft314(b);
	ft_set_word(b, 1, 0);
	expect_refused(parse(b, &o, why, sizeof(why)), why, -EPROTO, "PyObject size is 32, expected 16");
	/* 3.13t is refused by name */
	memcpy(b, py313_debug_offsets, sizeof(b));
	ft_set_word(b, 1, 1);
	expect_refused(parse(b, &o, why, sizeof(why)), why, -ENOTSUP,
		       "python 3.13.0 is a free-threaded build, which is supported from 3.14");
	/* TLBC words outside their structs or on top of other fields */
	ft314(b);
	ft_set_word(b, 37, 0x58);
	expect_refused(parse(b, &o, why, sizeof(why)), why, -EPROTO, "frame tlbc_index: offset 88 outside");
	ft314(b);
	ft_set_word(b, 37, 8);
	expect_refused(parse(b, &o, why, sizeof(why)), why, -EPROTO, "overlaps a field");
	ft314(b);
	ft_set_word(b, 48, 0xe8);
	expect_refused(parse(b, &o, why, sizeof(why)), why, -EPROTO, "overlaps a field");
}

/* fake 3.14t process memory */
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
static void put32(uint64_t a, uint32_t v) { memcpy(mem + (a - BASE), &v, 4); }

#define RT BASE
#define INTERP (BASE + 0x1000)
#define TS(i) (BASE + 0x3000 + 0x400 * (i))
#define FR(i) (BASE + 0x4000 + 0x100 * (i))
#define CODE (BASE + 0x6000)
#define TLBC (BASE + 0x6400)
#define COPY (BASE + 0x6800)
#define CODETYPE (BASE + 0x9000)
#define NAMES (BASE + 0x9800)
#define STR(i) (BASE + 0xa000 + 0x100 * (i))
#define LT (BASE + 0xb000)

/* A compact str in the free-threaded layout: kind at bit 8 of state. */
static void put_str(const struct cw_py_offsets *o, uint64_t at, const char *s, int ascii)
{
	size_t n = strlen(s);
	uint32_t st = (1u << 8) | (1u << 11) | ((uint32_t)ascii << 12);

	put64(at + o->unicode_length, n);
	put32(at + o->unicode_state, st);
	memcpy(mem + (at - BASE) + o->ascii_size + (ascii ? 0 : 16), s, n);
}

static void build(struct cw_py_proc *p)
{
	const struct cw_py_offsets *o = &p->off;
	uint8_t b[1024];
	/* two 8-unit entries, NO_COLUMNS (code 13), line +2 then +3 */
	static const uint8_t lt[] = { 0xef, 0x04, 0xef, 0x06 };
	uint32_t hex;

	memset(mem, 0, sizeof(mem));
	memset(p, 0, sizeof(*p));
	p->mem.read = fake_read;
	p->runtime = RT;
	p->pthread_tid_off = -1;
	ft314(b);
	memcpy(mem, b, 8 + 80 * 8);
	assert_int_equal(cw_py_offsets_debug(&p->mem, RT, 0, &p->off, &hex, NULL, 0), 0);
	memcpy(mem + (NAMES - BASE), "code", 5);
	put64(CODETYPE + o->tp_name, NAMES);
	put64(RT + o->rt_interp_head, INTERP);
	/* per-thread states: main (tid 4242) and a worker (4243) */
	put64(INTERP + o->is_threads_head, TS(0));
	put64(TS(0) + o->ts_next, TS(1));
	put64(TS(0) + o->ts_interp, INTERP);
	put64(TS(1) + o->ts_interp, INTERP);
	put64(TS(0) + (uint32_t)o->ts_native_thread_id, 4242);
	put64(TS(1) + (uint32_t)o->ts_native_thread_id, 4243);
	put64(TS(0) + o->ts_frame, FR(0));
	put64(TS(1) + o->ts_frame, FR(1));
	/* both run CODE, its executable tagged Py_TAG_DEFERRED */
	put64(FR(0) + o->fr_code, CODE | 1);
	put64(FR(0) + o->fr_lasti, CODE + o->co_code_adaptive + 2 * 5);
	put64(FR(1) + o->fr_code, CODE | 1);
	put32(FR(1) + (uint32_t)o->fr_tlbc_index, 2);
	put64(FR(1) + o->fr_lasti, COPY + 2 * 9);
	/* _PyCodeArray: size 3, entries[0] the inline copy, [2] the worker's */
	put64(CODE + o->co_tlbc, TLBC);
	put64(TLBC, 3);
	put64(TLBC + 8, CODE + o->co_code_adaptive);
	put64(TLBC + 24, COPY);
	put64(CODE + o->ob_type, CODETYPE);
	put64(CODE + o->co_filename, STR(0));
	put64(CODE + o->co_name, STR(1));
	put64(CODE + o->co_qualname, STR(2));
	put64(CODE + o->co_linetable, LT);
	put32(CODE + o->co_firstlineno, 40);
	put_str(o, STR(0), "/srv/job/train.py", 1);
	put_str(o, STR(1), "step", 1);
	put_str(o, STR(2), "Trainer.st\xe9p", 0); /* latin-1, not ascii */
	put64(LT + o->var_size, sizeof(lt));
	memcpy(mem + (LT - BASE) + o->bytes_sval, lt, sizeof(lt));
}

static int line_of(struct cw_py_proc *p, const struct cw_py_frame *f)
{
	struct cw_py_code c;
	int line;

	assert_int_equal(cw_py_code_read(p, f->code, &c), 0);
	line = cw_linetable_line(p->off.minor, c.linetable, c.linetable_len, (int)c.fp.firstlineno,
				 f->lasti == UINT32_MAX ? -1 : (int64_t)f->lasti);
	cw_py_code_release(&c);
	return line;
}

static void test_two_threads(void **state)
{
	struct cw_py_proc p;
	struct cw_py_thread th[4];
	struct cw_py_frame fr[4];
	struct cw_py_code c;
	int n, trunc;

	(void)state;
	build(&p);
	assert_int_equal(cw_py_proc_validate(&p), 0);
	n = cw_py_threads(&p, th, 4);
	assert_int_equal(n, 2);
	assert_int_equal(th[0].tid, 4242);
	assert_int_equal(th[1].tid, 4243);

	assert_int_equal(cw_py_walk(&p, th[0].frame, fr, 4, &trunc), 1);
	assert_true(fr[0].code == CODE);
	assert_int_equal(fr[0].lasti, 5);
	assert_int_equal(line_of(&p, &fr[0]), 42);

	assert_int_equal(cw_py_walk(&p, th[1].frame, fr, 4, &trunc), 1);
	assert_true(fr[0].code == CODE);
	assert_int_equal(fr[0].lasti, 9); /* from the thread-local copy */
	assert_int_equal(line_of(&p, &fr[0]), 45);

	assert_int_equal(cw_py_code_read(&p, CODE, &c), 0);
	assert_string_equal(c.file, "/srv/job/train.py");
	assert_string_equal(c.function, "Trainer.st\xc3\xa9p");
	cw_py_code_release(&c);
}

static void test_hostile_tlbc(void **state)
{
	struct cw_py_proc p;
	struct cw_py_frame fr[4];
	const struct cw_py_offsets *o = &p.off;
	int trunc;

	(void)state;
	build(&p);
	/* an index past the array, a negative one, a missing or huge array,
	 * an entry that is not a pointer: not started, never a wrong line */
	put32(FR(1) + (uint32_t)o->fr_tlbc_index, 3);
	assert_int_equal(cw_py_walk(&p, FR(1), fr, 4, &trunc), 1);
	assert_int_equal(fr[0].lasti, UINT32_MAX);
	put32(FR(1) + (uint32_t)o->fr_tlbc_index, (uint32_t)-1);
	assert_int_equal(cw_py_walk(&p, FR(1), fr, 4, &trunc), 1);
	assert_int_equal(fr[0].lasti, UINT32_MAX);
	put32(FR(1) + (uint32_t)o->fr_tlbc_index, 2);
	put64(TLBC, 1ull << 40);
	assert_int_equal(cw_py_walk(&p, FR(1), fr, 4, &trunc), 1);
	assert_int_equal(fr[0].lasti, UINT32_MAX);
	put64(TLBC, 3);
	put64(TLBC + 24, 16);
	assert_int_equal(cw_py_walk(&p, FR(1), fr, 4, &trunc), 1);
	assert_int_equal(fr[0].lasti, UINT32_MAX);
	put64(CODE + o->co_tlbc, 0);
	assert_int_equal(cw_py_walk(&p, FR(1), fr, 4, &trunc), 1);
	assert_int_equal(fr[0].lasti, UINT32_MAX);
	/* an array whose read faults ends the walk with an error */
	put64(CODE + o->co_tlbc, 0x7f0000000000ull);
	assert_true(cw_py_walk(&p, FR(1), fr, 4, &trunc) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_hostile_tlbc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
