/* UTF-8 repair (util/utf8.h): invalid bytes become U+FFFD in every JSON
 * string and key, never null and never a dropped key; and the shape user SQL
 * results take (store/ro_query.h) keeps a bad value and a bad column name. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "store/ro_query.h"
#include "util/table.h"
#include "util/utf8.h"

#define R "\xef\xbf\xbd"

static void fix_n(const char *in, size_t n, const char *want, size_t wn)
{
	size_t m = 0;
	char *s = cw_utf8_fix(in, n, &m);

	assert_non_null(s);
	assert_int_equal(m, wn);
	assert_memory_equal(s, want, m);
	free(s);
}

static void fix_is(const char *in, size_t n, const char *want)
{
	fix_n(in, n, want, strlen(want));
}

static void maximal_subparts(void **state)
{
	(void)state;
	fix_is("abc", 3, "abc");
	fix_is("\xc3\xa9", 2, "\xc3\xa9");
	fix_is("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80");
	fix_is("a\xff" "b", 3, "a" R "b");
	fix_is("\xc3", 1, R);                          /* truncated at the end */
	fix_is("\xe2\x82", 2, R);                      /* one maximal subpart, one U+FFFD */
	fix_is("\xc0\xaf", 2, R R);                    /* overlong: two */
	fix_is("\xed\xa0\x80", 3, R R R);              /* a surrogate: three */
	fix_is("\xf4\x90\x80\x80", 4, R R R R);        /* past U+10FFFF */
	fix_is("\xf0\x9f\x98" "x", 4, R "x");
	fix_n("a\0\xff", 3, "a\0" R, 5);              /* a NUL is kept, not an end */
	assert_true(cw_utf8_valid("\xe2\x82\xac", 3));
	assert_false(cw_utf8_valid("\xe2\x82", 2));
	assert_false(cw_utf8_valid("\xed\xbf\xbf", 3));
}

static void json_never_null(void **state)
{
	json_t *o, *j;
	char *d;

	(void)state;
	j = cw_json_str("x\x80y");
	assert_true(json_is_string(j));
	assert_string_equal(json_string_value(j), "x" R "y");
	json_decref(j);
	j = cw_json_str(NULL);
	assert_true(json_is_null(j));
	json_decref(j);
	o = json_object();
	assert_int_equal(cw_json_set(o, "k\xfe", json_integer(1)), 0);
	d = json_dumps(o, JSON_COMPACT);
	assert_string_equal(d, "{\"k" R "\":1}");
	free(d);
	json_decref(o);
}

static void query_results_keep_bad_text(void **state)
{
	const char *names[] = { "ok", "c\xff" };
	struct cw_ro_value v[2] = { { .type = CW_RO_TEXT, .p = "v\xc3", .len = 2 },
				    { .type = CW_RO_INT, .i = 7 } };
	struct cw_ro_result r = { .ncols = 2, .nrows = 1, .names = (char **)names, .vals = v };
	json_t *a;
	char *d;

	(void)state;
	a = cw_ro_result_json(&r);
	assert_non_null(a);
	d = json_dumps(a, JSON_COMPACT);
	assert_string_equal(d, "[{\"ok\":\"v" R "\",\"c" R "\":7}]");
	free(d);
	json_decref(a);
}

/* Text output too: the query table and CSV show U+FFFD, not raw bytes. */
static void tables_and_csv(void **state)
{
	struct cw_table *t = cw_table_new(1);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(t);
	assert_int_equal(cw_table_header(t, 0, "h\xff", CW_ALIGN_LEFT), 0);
	assert_int_equal(cw_table_row(t), 0);
	assert_int_equal(cw_table_set(t, 0, "x\xc3"), 0);
	f = open_memstream(&buf, &len);
	assert_int_equal(cw_table_print(t, f), 0);
	assert_int_equal(cw_table_print_csv(t, f), 0);
	assert_int_equal(cw_csv_field(f, "y\x80,"), 0);
	fclose(f);
	assert_string_equal(buf, "h" R "\nx" R "\nh" R "\r\nx" R "\r\n\"y" R ",\"");
	free(buf);
	cw_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(maximal_subparts),
		cmocka_unit_test(json_never_null),
		cmocka_unit_test(query_results_keep_bad_text),
		cmocka_unit_test(tables_and_csv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
