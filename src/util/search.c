#include "util/search.h"

size_t cw_partition_point(const void *rows, size_t n, const void *key,
			  int (*below)(const void *rows, size_t i, const void *key))
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (below(rows, mid, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
