/* Binary search over sorted rows of any shape. */
#ifndef CW_UTIL_SEARCH_H
#define CW_UTIL_SEARCH_H

#include <stddef.h>

/* The first index in [0, n) at which below(rows, i, key) is false (n when
 * none), for a predicate that holds on a prefix of the rows: the lower
 * bound of key in rows sorted by what below compares. */
size_t cw_partition_point(const void *rows, size_t n, const void *key,
			  int (*below)(const void *rows, size_t i, const void *key));

#endif
