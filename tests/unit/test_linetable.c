/* Line-table decoders against tables produced by the real interpreters
 * (CPython 3.10.13 and 3.12.1 compiling the same function; expected lines
 * from code.co_lines()), and against truncated and garbage tables, which
 * must give errors and never read out of bounds (run under ASan too). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pyframe/linetable.h"

/* def f(a): a list comprehension over three lines, a lambda over two,
 * an if/return; compiled by 3.10.13 */
static const uint8_t tab310[] = { 6, 1, 6, 2, 6, 254, 6, 4, 2, 1, 4, 255, 4, 3, 8, 1, 4, 1 };
static const int want310[] = { 2, 2, 2, 4, 4, 4, 2, 2, 2, 6, 6, 6, 7, 6, 6, 9, 9, 10, 10, 10, 10, 11, 11 };

/* the same function compiled by 3.12.1 (comprehension inlined, PEP 709) */
static const uint8_t tab312[] = { 128, 0,   244, 6,   0,   18,  23,  144, 113, 147, 24,  246, 5,   3,   9,   6,
				  224, 12,  13,  240, 3,   0,   9,   10,  136, 65,  139, 5,   240, 3,   3,   9,
				  6,   128, 65,  240, 0,   3,   9,   6,   242, 8,   1,   10,  15,  216, 16,  17,
				  243, 3,   1,   9,   19,  128, 65,  241, 6,   0,   8,   9,   216, 15,  16,  144,
				  33,  136, 116, 136, 11,  216, 11,  15,  249, 242, 19,  3,   9,   6 };
static const int want312[] = { 1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 4, 3, 3, 3, 3, 3, 3,
			       2, 2, 2, 6, 6, 6, 7, 6, 6, 6, 6, 6, 9, 9, 10, 10, 10, 10, 11, 0, 0, 2, 2, 2 };

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_310_real_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(want310); i++)
		assert_int_equal(cw_linetable_310(tab310, sizeof(tab310), 1, (int64_t)i), want310[i]);
	assert_int_equal(cw_linetable_310(tab310, sizeof(tab310), 1, (int64_t)N(want310)), -ENOENT);
	assert_int_equal(cw_linetable_310(tab310, sizeof(tab310), 1, -1), 1); /* not started: first line */
}

static void test_312_real_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(want312); i++)
		assert_int_equal(cw_linetable_311(tab312, sizeof(tab312), 1, (int64_t)i), want312[i]);
	assert_int_equal(cw_linetable_311(tab312, sizeof(tab312), 1, (int64_t)N(want312)), -ENOENT);
	assert_int_equal(cw_linetable_line(12, tab312, sizeof(tab312), 1, 31), 7);
	assert_int_equal(cw_linetable_line(10, tab310, sizeof(tab310), 1, 12), 7);
}

static void test_first_line_offset(void **state)
{
	(void)state;
	/* the same table for a function defined at line 101 shifts every line */
	assert_int_equal(cw_linetable_311(tab312, sizeof(tab312), 101, 31), 107);
	assert_int_equal(cw_linetable_310(tab310, sizeof(tab310), 101, 12), 107);
}

static void test_entry_codes(void **state)
{
	(void)state;
	/* LONG (14): Δline +5 (svarint 10), end line, col, end col; 2 units */
	const uint8_t lng[] = { 0x80 | (14 << 3) | 1, 10, 0, 3, 4 };
	/* NO_COLUMNS (13): +10 (svarint 20), then -3 (svarint 7) */
	const uint8_t nocol[] = { 0x80 | (13 << 3) | 0, 20, 0x80 | (13 << 3) | 0, 7 };
	/* a multi-byte varint: Δline +100 = svarint 200 = 0b11_001000 -> 0x48, 0x03 */
	const uint8_t big[] = { 0x80 | (13 << 3) | 0, 0x40 | (200 & 63), 200 >> 6 };
	/* NONE (15) covers 3 units: no line */
	const uint8_t none[] = { 0x80 | (15 << 3) | 2 };

	assert_int_equal(cw_linetable_311(lng, sizeof(lng), 10, 0), 15);
	assert_int_equal(cw_linetable_311(lng, sizeof(lng), 10, 1), 15);
	assert_int_equal(cw_linetable_311(lng, sizeof(lng), 10, 2), -ENOENT);
	assert_int_equal(cw_linetable_311(nocol, sizeof(nocol), 10, 1), 17); /* 10 + 10 - 3 */
	assert_int_equal(cw_linetable_311(big, sizeof(big), 1, 0), 101);
	assert_int_equal(cw_linetable_311(none, sizeof(none), 1, 2), 0);
}

static void test_truncated_tables(void **state)
{
	(void)state;
	/* every prefix decodes or fails cleanly; heap copies of the exact
	 * length let ASan catch a read one past the end */
	for (size_t len = 0; len <= sizeof(tab312); len++) {
		uint8_t *t = malloc(len ? len : 1);

		memcpy(t, tab312, len);
		for (int64_t l = 0; l < (int64_t)N(want312) + 2; l++) {
			int r = cw_linetable_311(t, len, 1, l);

			assert_true(r >= 0 || r == -EINVAL || r == -ENOENT);
		}
		free(t);
	}
	for (size_t len = 0; len <= sizeof(tab310); len++) {
		uint8_t *t = malloc(len ? len : 1);

		memcpy(t, tab310, len);
		int r = cw_linetable_310(t, len, 1, 5);

		assert_true(r >= 0 || r == -EINVAL || r == -ENOENT);
		if (len & 1)
			assert_int_equal(r, -EINVAL);
		free(t);
	}
}

static void test_garbage(void **state)
{
	(void)state;
	/* not at an entry start */
	const uint8_t bad[] = { 0x05, 0x80 };
	/* a varint that never ends */
	uint8_t endless[64];
	/* a runaway line: LONG entries each adding ~2^29 */
	uint8_t runaway[6 * 8];

	assert_int_equal(cw_linetable_311(bad, sizeof(bad), 1, 0), -EINVAL);
	endless[0] = 0x80 | (13 << 3);
	memset(endless + 1, 0x7f, sizeof(endless) - 1);
	assert_int_equal(cw_linetable_311(endless, sizeof(endless), 1, 0), -EINVAL);
	for (int i = 0; i < 8; i++) {
		uint8_t *e = runaway + 6 * i;

		e[0] = 0x80 | (13 << 3);
		e[1] = 0x40;
		e[2] = 0x40;
		e[3] = 0x40;
		e[4] = 0x40;
		e[5] = 0x0f; /* 2^24 * 15 >> 1 per entry */
	}
	assert_int_equal(cw_linetable_311(runaway, sizeof(runaway), 1, 7), -EINVAL);
	srand(7);
	for (int round = 0; round < 2000; round++) {
		size_t len = (size_t)(rand() % 64);
		uint8_t *t = malloc(len ? len : 1);

		for (size_t i = 0; i < len; i++)
			t[i] = (uint8_t)rand();
		(void)cw_linetable_311(t, len, rand() % 1000, rand() % 200);
		(void)cw_linetable_310(t, len, rand() % 1000, rand() % 200);
		free(t);
	}
}

/* The 3.10 encoder's special cases (CPython 3.10 Python/compile.c
 * assemble_line_range, decoded as Objects/codeobject.c advance() does),
 * first line 100; offsets are code units, the table counts bytes:
 *   (6, +1)              units 0-2     line 101
 *   (0, +127) (4, +73)   units 3-4     line 301: a jump > 127 is split,
 *                                      the zero-width entry moves the line
 *   (4, -128)            units 5-6     no line (0); the line stays 301
 *   (2, +1)              unit 7        line 302
 *   (254, -2) (10, 0)    units 8-139   line 300: a range > 254 bytes is
 *                                      split, the rest carries delta 0
 *   (0, -127) (2, -60)   unit 140      line 113: a fall > 127 is split
 *   (254, -128) (4, -128) units 141-269 no line over a split range
 *   (2, 0)               unit 270      line 113 again */
static const uint8_t tab310s[] = { 6,   1,   0,   127, 4,   73,  4, 0x80, 2, 1,    254, 0xfe, 10, 0,
				   0, 0x81, 2,   0xc4, 254, 0x80, 4, 0x80, 2, 0 };

static void test_310_special_cases(void **state)
{
	(void)state;
	for (int64_t u = 0; u <= 2; u++)
		assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, u), 101);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 3), 301);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 4), 301);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 5), 0);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 6), 0);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 7), 302);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 8), 300);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 134), 300); /* last unit of the 254 */
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 135), 300); /* first of the rest */
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 139), 300);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 140), 113);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 141), 0);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 268), 0);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 269), 0);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 270), 113);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, 271), -ENOENT);
	assert_int_equal(cw_linetable_310(tab310s, sizeof(tab310s), 100, -1), 100);
	assert_int_equal(cw_linetable_line(10, tab310s, sizeof(tab310s), 100, 140), 113);
	/* a line at or below 0 (a corrupt or synthetic table) is "no line" */
	{
		const uint8_t down[] = { 2, 0xff, 2, 0xfe };

		assert_int_equal(cw_linetable_310(down, sizeof(down), 2, 0), 1);
		assert_int_equal(cw_linetable_310(down, sizeof(down), 2, 1), 0);
	}
	/* an empty table has no offsets */
	assert_int_equal(cw_linetable_310(tab310s, 0, 100, 0), -ENOENT);
}

/* 3.11+ entry lengths are (b & 7) + 1 units; ONE_LINE codes move the line
 * by 0, 1, 2; a NONE entry keeps the computed line. */
static void test_311_lengths_and_one_line(void **state)
{
	const uint8_t t[] = {
		0x80 | (13 << 3) | 7, 4,       /* units 0-7: +2 */
		0x80 | (10 << 3) | 0, 1, 2,    /* unit 8: +0 */
		0x80 | (11 << 3) | 1, 1, 2,    /* units 9-10: +1 */
		0x80 | (15 << 3) | 0,          /* unit 11: none */
		0x80 | (12 << 3) | 0, 1, 2,    /* unit 12: +2 */
		0x80 | (3 << 3) | 0, 5,        /* unit 13: SHORT, same line */
	};

	(void)state;
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 0), 12);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 7), 12);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 8), 12);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 9), 13);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 10), 13);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 11), 0);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 12), 15);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 13), 15);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, 14), -ENOENT);
	assert_int_equal(cw_linetable_311(t, sizeof(t), 10, -1), 10);
	assert_int_equal(cw_linetable_line(11, t, sizeof(t), 10, 12), 15);
	assert_int_equal(cw_linetable_line(13, t, sizeof(t), 10, 12), 15);
	/* a line at or below 0 is "no line" */
	{
		const uint8_t down[] = { 0x80 | (13 << 3) | 0, 3 }; /* -1 */

		assert_int_equal(cw_linetable_311(down, sizeof(down), 1, 0), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_310_real_table),  cmocka_unit_test(test_312_real_table),
		cmocka_unit_test(test_first_line_offset), cmocka_unit_test(test_entry_codes),
		cmocka_unit_test(test_truncated_tables), cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_310_special_cases), cmocka_unit_test(test_311_lengths_and_one_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
