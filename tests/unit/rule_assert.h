/* Assertions the rule and store tests share (test_rules.c,
 * test_rule_triggers.c, test_rules_layers.c, test_gpu_rules.c,
 * test_store.c, test_retention_tiers.c): time units, one value from the
 * store, finding a chain by kind, its fixes and evidence. Include after
 * <cmocka.h>. */
#ifndef CW_TEST_RULE_ASSERT_H
#define CW_TEST_RULE_ASSERT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"

#define MS 1000000ULL
#define SEC 1000000000ULL
#define T0 (1000 * SEC)

/* The first column of the first row of sql on db (-1: no row); the
 * statement must prepare. */
static inline int64_t store_q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Removes a test store and the -wal and -shm SQLite left beside it. */
static inline void remove_store_files(const char *path)
{
	char p[4200];

	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

/* The first chain of kind in r, NULL when none. */
static inline const struct cw_chain *find(const struct cw_explain_result *r, enum cw_kind kind)
{
	for (int i = 0; i < r->count; i++)
		if (r->chains[i].kind == kind)
			return &r->chains[i];
	return NULL;
}

/* Whether c has exactly this fix; prints its fixes when not. */
static inline int has_fix(const struct cw_chain *c, const char *fix)
{
	for (int i = 0; i < c->nfix; i++)
		if (!strcmp(c->fix[i], fix))
			return 1;
	for (int i = 0; i < c->nfix; i++)
		print_message("fix %d: %s\n", i, c->fix[i]);
	return 0;
}

/* Whether one of c's fixes contains needle. */
static inline int has_fix_part(const struct cw_chain *c, const char *needle)
{
	for (int i = 0; i < c->nfix; i++)
		if (strstr(c->fix[i], needle))
			return 1;
	return 0;
}

/* The value of c's evidence key; fails the test when c has none. */
static inline double evidence(const struct cw_chain *c, const char *key)
{
	for (int i = 0; i < c->nevidence; i++)
		if (!strcmp(c->evidence[i].key, key))
			return c->evidence[i].value;
	fail_msg("no evidence \"%s\"", key);
	return NAN;
}

static inline void contains(const char *s, const char *part)
{
	if (!strstr(s, part))
		fail_msg("\"%s\" not in \"%s\"", part, s);
}

static inline void near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * (fabs(want) + 1))
		fail_msg("got %.12g, want %.12g", got, want);
}

/* The fixtures' pseudo-random sequence (a 15-bit LCG, as rand() was). */
static inline uint32_t lcg_next(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) & 0x7fff;
}

#endif
