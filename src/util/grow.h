/* Growing arrays: amortised doubling for the realloc'd tables that index
 * threads, communicators, kernel names and rows. */
#ifndef CW_UTIL_GROW_H
#define CW_UTIL_GROW_H

#include <stddef.h>

/* Room for one more element: arr holds n elements of elem bytes with
 * *alloc allocated. Returns arr when there is room, else arr reallocated
 * to twice *alloc elements (first when none) with *alloc updated, or NULL
 * (out of memory or overflow; arr and *alloc are left as they were). */
void *cw_grow(void *arr, size_t n, size_t *alloc, size_t elem, size_t first);

#endif
