#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>

void *cw_grow(void *arr, size_t n, size_t *alloc, size_t elem, size_t first)
{
	size_t na;
	void *nv;

	if (n < *alloc)
		return arr;
	na = *alloc ? *alloc * 2 : first;
	if (na < *alloc || (elem && na > SIZE_MAX / elem))
		return NULL;
	nv = realloc(arr, na * elem);
	if (nv)
		*alloc = na;
	return nv;
}
