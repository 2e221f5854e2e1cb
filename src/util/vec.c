#include "util/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int cw_vec_reserve(void *pp, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t nc = *cap ? *cap : first;
	void *v, *nv;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	if (nc > SIZE_MAX / elem)
		return -ENOMEM;
	/* The array pointer is read and written as bytes: pp points at a
	 * pointer of whatever element type the caller has. */
	memcpy(&v, pp, sizeof(v));
	nv = realloc(v, nc * elem);
	if (!nv)
		return -ENOMEM;
	memcpy(pp, &nv, sizeof(nv));
	*cap = nc;
	return 0;
}
