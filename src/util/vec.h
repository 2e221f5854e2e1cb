/* Growing arrays: the doubling every loader of rows does. */
#ifndef CW_UTIL_VEC_H
#define CW_UTIL_VEC_H

#include <stddef.h>

/* Makes room for need elements of elem bytes in the array at *pp (a
 * pointer to the array pointer) of capacity *cap, doubling from first.
 * Returns 0, or -ENOMEM with the array and *cap unchanged. */
int cw_vec_reserve(void *pp, size_t *cap, size_t need, size_t elem, size_t first);

#endif
