/* Fan-out warnings are one per node and cause (src/fleet/fanout.c): the
 * same failure on the same node with other numbers (elapsed ms) is one
 * warning; the same failure on another node, or another failure on the
 * same node, is another. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include "fleet/fanout.h"

static void test_same_node_same_cause(void **state)
{
	(void)state;
	assert_true(cw_fleet_warning_same("node \"10.0.0.1:7070\": Failed to connect after 1 ms",
					  "node \"10.0.0.1:7070\": Failed to connect after 250 ms"));
	assert_true(cw_fleet_warning_same("clock skew unknown (0 of 8 samples)", "clock skew unknown (3 of 8 samples)"));
}

static void test_other_node_or_cause(void **state)
{
	(void)state;
	/* Addresses differ only in digits: still two nodes. */
	assert_false(cw_fleet_warning_same("node \"10.0.0.1:7070\": Failed to connect after 1 ms",
					   "node \"10.0.0.2:7070\": Failed to connect after 1 ms"));
	assert_false(cw_fleet_warning_same("node \"a:1\": HTTP 401: bearer token required",
					   "node \"a:1\": HTTP 400: sql error"));
	assert_false(cw_fleet_warning_same("node \"a:1\": x", "node \"a:1\": xy"));
}

static void test_add_keeps_one(void **state)
{
	json_t *a = json_array();

	(void)state;
	cw_fleet_warning_add(a, "node \"a:1\": no answer within 2003 ms");
	cw_fleet_warning_add(a, "node \"a:1\": no answer within 2001 ms");
	cw_fleet_warning_add(a, "node \"b:1\": no answer within 2001 ms");
	assert_int_equal(json_array_size(a), 2);
	json_decref(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_node_same_cause),
		cmocka_unit_test(test_other_node_or_cause),
		cmocka_unit_test(test_add_keeps_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
