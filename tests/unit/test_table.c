/* util/table: aligned text and RFC 4180 CSV. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/table.h"

static char *render(const struct cw_table *t, int csv)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(csv ? cw_table_print_csv(t, f) : cw_table_print(t, f), 0);
	fclose(f);
	return buf;
}

static struct cw_table *sample(void)
{
	struct cw_table *t = cw_table_new(3);

	assert_non_null(t);
	assert_int_equal(cw_table_header(t, 0, "op", CW_ALIGN_LEFT), 0);
	assert_int_equal(cw_table_header(t, 1, "count", CW_ALIGN_RIGHT), 0);
	assert_int_equal(cw_table_header(t, 2, "note", CW_ALIGN_LEFT), 0);
	assert_int_equal(cw_table_row(t), 0);
	cw_table_set(t, 0, "cudaMalloc");
	cw_table_setf(t, 1, "%d", 7);
	cw_table_set(t, 2, "a, \"b\"");
	assert_int_equal(cw_table_row(t), 0);
	cw_table_set(t, 0, "ncclAllReduce");
	cw_table_setf(t, 1, "%d", 12345);
	cw_table_set(t, 2, NULL);
	return t;
}

static void test_text_alignment(void **state)
{
	struct cw_table *t = sample();
	char *s = render(t, 0);

	(void)state;
	/* Left column padded to 13, numbers right-aligned to width 5, the last
	 * column unpadded (no trailing spaces). */
	assert_string_equal(s, "op             count  note\n"
			       "cudaMalloc         7  a, \"b\"\n"
			       "ncclAllReduce  12345\n");
	free(s);
	cw_table_free(t);
}

static void test_csv_quoting(void **state)
{
	struct cw_table *t = sample();
	char *s = render(t, 1);

	(void)state;
	assert_string_equal(s, "op,count,note\r\n"
			       "cudaMalloc,7,\"a, \"\"b\"\"\"\r\n"
			       "ncclAllReduce,12345,\r\n");
	free(s);
	cw_table_free(t);
}

static void test_csv_newlines_quoted(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	cw_csv_field(f, "line1\nline2");
	fputc(',', f);
	cw_csv_field(f, "cr\r");
	fputc(',', f);
	cw_csv_field(f, "plain");
	cw_csv_end_row(f);
	fclose(f);
	assert_string_equal(buf, "\"line1\nline2\",\"cr\r\",plain\r\n");
	free(buf);
}

static void test_utf8_and_control_width(void **state)
{
	struct cw_table *t = cw_table_new(2);
	char *s;

	(void)state;
	assert_int_equal(cw_text_width("µs"), 2);
	assert_int_equal(cw_text_width("a\nb"), 4);
	cw_table_header(t, 0, "x", CW_ALIGN_LEFT);
	cw_table_header(t, 1, "y", CW_ALIGN_LEFT);
	cw_table_row(t);
	cw_table_set(t, 0, "µµ");
	cw_table_set(t, 1, "1");
	cw_table_row(t);
	cw_table_set(t, 0, "a\nb");
	cw_table_set(t, 1, "2");
	s = render(t, 0);
	/* A multi-byte character is one column; a newline is shown as \n and
	 * the row stays on one line. */
	assert_string_equal(s, "x     y\n"
			       "µµ    1\n"
			       "a\\nb  2\n");
	free(s);
	cw_table_free(t);
}

static void test_errors_and_empty(void **state)
{
	struct cw_table *t = cw_table_new(1);
	char *s;

	(void)state;
	assert_null(cw_table_new(0));
	assert_int_equal(cw_table_set(t, 0, "x"), -22); /* no row yet */
	cw_table_header(t, 0, "only", CW_ALIGN_RIGHT);
	cw_table_row(t);
	assert_int_equal(cw_table_set(t, 1, "x"), -22);
	cw_table_free(t);
	t = cw_table_new(1);
	cw_table_header(t, 0, "h", CW_ALIGN_LEFT);
	s = render(t, 0);
	assert_string_equal(s, "h\n");
	assert_int_equal(cw_table_nrows(t), 0);
	free(s);
	cw_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_alignment),
		cmocka_unit_test(test_csv_quoting),
		cmocka_unit_test(test_csv_newlines_quoted),
		cmocka_unit_test(test_utf8_and_control_width),
		cmocka_unit_test(test_errors_and_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
