/* Stored text on a terminal (util/term.h): C0 controls, C1 controls as
 * UTF-8 (U+0080-U+009F) and as raw bytes, bidirectional controls and bytes
 * that are not UTF-8 are shown escaped; other text, UTF-8 included, as it
 * is; widths match what is written; and a table (query's output) uses it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/view.h"
#include "util/table.h"
#include "util/term.h"

static char *shown(const char *s, int lines)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(lines ? cw_term_put_lines(f, s) : cw_term_put(f, s), 0);
	fclose(f);
	return buf;
}

static void check(const char *in, const char *out)
{
	char *s = shown(in, 0), *e = cw_term_escape(in);

	assert_string_equal(s, out);
	assert_string_equal(e, out);
	assert_int_equal(cw_term_width(in), strlen(out)); /* every output here is ASCII: a byte a column */
	free(s);
	free(e);
}

static void test_c0(void **state)
{
	(void)state;
	check("plain text", "plain text");
	check("a\nb\tc\rd", "a\\nb\\tc\\rd");
	check("\x1b[31mred\x07", "^[[31mred^G");
	check("del\x7f", "del^?");
}

static void test_c1(void **state)
{
	(void)state;
	/* U+009B (CSI) and U+0085 (NEL) as UTF-8. */
	check("x\xc2\x9b" "31m", "x\\u009b31m");
	check("\xc2\x85\xc2\x80\xc2\x9f", "\\u0085\\u0080\\u009f");
	/* Raw C1 bytes (not UTF-8), and other bytes that are not UTF-8. */
	check("x\x9b" "31m", "x\\x9b31m");
	check("\x85\xff\xc2", "\\x85\\xff\\xc2");
}

static void test_bidi(void **state)
{
	(void)state;
	check("evil\xe2\x80\xae" "txt.exe", "evil\\u202etxt.exe");
	check("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "\\u202a\\u202b\\u202c\\u202d");
	check("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", "\\u2066\\u2067\\u2068\\u2069");
	check("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u200e\\u200f\\u061c");
}

static void test_text_kept(void **state)
{
	char *s;

	(void)state;
	/* UTF-8 that is not a control: as it is, one column a character. */
	s = shown("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x9a\x80 \xe2\x80\x8b", 0);
	assert_string_equal(s, "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x9a\x80 \xe2\x80\x8b");
	assert_int_equal(cw_term_width("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x9a\x80"), 8);
	free(s);
	/* A report's own lines are kept; what is in them is not. */
	s = shown("line 1\nline \xe2\x80\xae" "2\n", 1);
	assert_string_equal(s, "line 1\nline \\u202e2\n");
	free(s);
}

static void test_table(void **state)
{
	struct cw_table *t = cw_table_new(2);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(t);
	assert_non_null(f);
	cw_table_header(t, 0, "NAME", CW_ALIGN_LEFT);
	cw_table_header(t, 1, "N", CW_ALIGN_RIGHT);
	assert_int_equal(cw_table_row(t), 0);
	cw_table_set(t, 0, "k\xc2\x9b\xe2\x80\xae");
	cw_table_set(t, 1, "1");
	assert_int_equal(cw_table_row(t), 0);
	cw_table_set(t, 0, "plain");
	cw_table_set(t, 1, "2");
	assert_int_equal(cw_table_print(t, f), 0);
	fclose(f);
	assert_string_equal(buf, "NAME           N\n"
				 "k\\u009b\\u202e  1\n"
				 "plain          2\n");
	free(buf);
	cw_table_free(t);
}

/* JSON to a terminal: C1 and bidi become JSON escapes, whatever the
 * write boundaries; everything else (UTF-8, bytes not UTF-8) as it is. */
static void test_json_stream(void **state)
{
	static const char in[] = "{\"host\": \"a\xc2\x9b" "31m\xe2\x80\xae" "b\xc3\xa9\xf0\x9f\x9a\x80\xd8\x9c\x9b\"}\n";
	static const char want[] = "{\"host\": \"a\\u009b31m\\u202eb\xc3\xa9\xf0\x9f\x9a\x80\\u061c\x9b\"}\n";

	(void)state;
	for (size_t step = 1; step <= sizeof(in); step++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *under = open_memstream(&buf, &len), *j;

		assert_non_null(under);
		j = cw_term_json_stream(under);
		assert_non_null(j);
		setvbuf(j, NULL, _IONBF, 0);
		for (size_t off = 0; off < sizeof(in) - 1; off += step)
			fwrite(in + off, 1, off + step > sizeof(in) - 1 ? sizeof(in) - 1 - off : step, j);
		assert_int_equal(fclose(j), 0);
		fclose(under);
		assert_string_equal(buf, want);
		free(buf);
	}
}

/* trace's live view: an op name and an alert with controls shown escaped,
 * the screen's own clear sequence kept (on a terminal). */
static void test_view(void **state)
{
	struct cw_trace_view *v = NULL;
	struct cw_trace_view_status st = {.elapsed_ns = 1000000000ULL, .db = "x.db"};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	assert_int_equal(cw_trace_view_new(&v), 0);
	cw_trace_view_set_aggregated(v, "cuda", "op\x1b]0;pwn\x07\xe2\x80\xae", 5);
	cw_trace_view_alert(v, "host \xc2\x9b" "31m");
	cw_trace_view_render(v, f, &st, 1);
	fclose(f);
	assert_memory_equal(buf, "\033[H\033[2J", 7);
	assert_null(strchr(buf + 7, '\033'));
	assert_null(strstr(buf, "\xe2\x80\xae"));
	assert_null(strstr(buf, "\xc2\x9b"));
	assert_non_null(strstr(buf, "op^[]0;pwn^G\\u202e"));
	assert_non_null(strstr(buf, "warning: host \\u009b31m\n"));
	free(buf);
	cw_trace_view_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c0),
		cmocka_unit_test(test_c1),
		cmocka_unit_test(test_bidi),
		cmocka_unit_test(test_text_kept),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_json_stream),
		cmocka_unit_test(test_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
