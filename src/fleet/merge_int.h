/* Internals of merge shared by merge.c and merge_tables.c. */
#ifndef CW_FLEET_MERGE_INT_H
#define CW_FLEET_MERGE_INT_H

#include "fleet/merge.h"

struct cw_merge_table_sql {
	const char *name;
	int has_node;
	const char *insert; /* INSERT ... SELECT FROM src.<table> (or the events stage) */
	/* A column a later schema version added: an input without it is
	 * copied with insert_old instead. NULL: the table never changed. */
	const char *new_col;
	const char *insert_old;
};

extern const struct cw_merge_table_sql cw_merge_tables[CW_MT_MAX];
/* Stacks before the events that point at them, sessions first. */
extern const enum cw_merge_table cw_merge_copy_order[CW_MT_MAX];
/* Tables copied through another (the events view's storage, meta). */
extern const char *const cw_merge_via_other[];

#endif
