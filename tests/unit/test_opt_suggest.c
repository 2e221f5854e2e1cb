/* The commands' one option reader (cmd/opt_error.h): -h answered as help
 * whatever the optstring, and the "did you mean" of an unknown command or
 * long option: near typos get the name, far words get nothing, ties go to
 * the name the word begins. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <getopt.h>
#include <string.h>

#include "cmd/opt_error.h"

static const char *const cmds[] = { "demo", "explain", "query", "check", "trace", "where",
				    "export", "merge", "serve", "mcp", "version", "help" };
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void test_suggest(void **state)
{
	(void)state;
	assert_string_equal(cw_suggest("explian", cmds, NCMDS), "explain"); /* transposition */
	assert_string_equal(cw_suggest("serv", cmds, NCMDS), "serve");      /* deletion */
	assert_string_equal(cw_suggest("querry", cmds, NCMDS), "query");    /* insertion */
	assert_string_equal(cw_suggest("exprot", cmds, NCMDS), "export");
	assert_string_equal(cw_suggest("mcq", cmds, NCMDS), "mcp");         /* substitution, short word */
	/* nothing close, or an exact name (not a typo) */
	assert_null(cw_suggest("zzzzzz", cmds, NCMDS));
	assert_null(cw_suggest("ls", cmds, NCMDS));
	assert_null(cw_suggest("explain", cmds, NCMDS));
	assert_null(cw_suggest("xx", cmds, NCMDS));
	/* a short word allows one edit only: two are another word */
	assert_null(cw_suggest("abc", (const char *const[]){ "xyc" }, 1));
	/* ties: the name the word begins */
	assert_string_equal(cw_suggest("nod", (const char *const[]){ "pod", "node" }, 2), "node");
	assert_string_equal(cw_suggest("nod", (const char *const[]){ "node", "pod" }, 2), "node");
	assert_null(cw_suggest("x", NULL, 0));
}

static void test_hint(void **state)
{
	static const struct option lo[] = {
		{ "since", required_argument, NULL, 's' }, { "db", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 },
	};
	char *argv[] = { "explain", "--json", NULL };
	static const char *const extra[] = { "--json", NULL };
	char buf[96];
	int c;

	(void)state;
	optind = 1;
	opterr = 0;
	c = cw_getopt(2, argv, "+:", lo, NULL); /* remembers lo */
	assert_int_equal(c, '?');
	assert_string_equal(cw_opt_hint("--sinse", NULL, buf, sizeof(buf)), " (did you mean \"--since\"?)");
	assert_string_equal(cw_opt_hint("--sinse=5m", NULL, buf, sizeof(buf)), " (did you mean \"--since\"?)");
	assert_string_equal(cw_opt_hint("--jsno", extra, buf, sizeof(buf)), " (did you mean \"--json\"?)");
	assert_string_equal(cw_opt_hint("--jsno", NULL, buf, sizeof(buf)), "");
	assert_string_equal(cw_opt_hint("-x", NULL, buf, sizeof(buf)), "");
	assert_string_equal(cw_opt_hint("--", NULL, buf, sizeof(buf)), "");
	assert_string_equal(cw_opt_hint("--frobnicate", NULL, buf, sizeof(buf)), "");
}

static void test_dash_h(void **state)
{
	static const struct option lo[] = {
		{ "db", required_argument, NULL, 'd' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	static const char *const optstrings[] = { "", ":", "+:", ":d:", "+:o:" };

	(void)state;
	for (size_t i = 0; i < sizeof(optstrings) / sizeof(optstrings[0]); i++) {
		char *argv[] = { "cmd", "-h", NULL };

		optind = 1;
		opterr = 0;
		assert_int_equal(cw_getopt(2, argv, optstrings[i], lo, NULL), 'h');
	}
	/* -x is still unknown, and "-h" as a value stays a value */
	{
		char *argv[] = { "cmd", "-x", NULL };

		optind = 1;
		assert_int_equal(cw_getopt(2, argv, ":", lo, NULL), '?');
	}
	{
		char *argv[] = { "cmd", "--db", "-h", NULL };

		optind = 1;
		assert_int_equal(cw_getopt(3, argv, ":", lo, NULL), 'd');
		assert_string_equal(optarg, "-h");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_hint),
		cmocka_unit_test(test_dash_h),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
