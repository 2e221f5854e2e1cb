/* Fuzzes both CPython line-table decoders (3.10 PEP 626 pairs and the
 * 3.11+ location table) with arbitrary tables: remote memory is hostile,
 * so no table may read out of bounds, loop, or overflow. Input: one byte
 * selecting the format, two bytes of co_firstlineno, two of lasti, then
 * the table. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyframe/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *tab;
	size_t len;
	int first, r;
	int64_t lasti;

	if (size < 5)
		return 0;
	first = data[1] | data[2] << 8;
	lasti = (int64_t)(data[3] | data[4] << 8) - 1;
	len = size - 5;
	/* an exact-size heap copy so ASan sees a read one past the end */
	tab = malloc(len ? len : 1);
	if (!tab)
		return 0;
	memcpy(tab, data + 5, len);
	r = cw_linetable_line(data[0] & 1 ? 11 : 10, tab, len, first, lasti);
	if (r > 100000000)
		__builtin_trap(); /* the decoders cap lines */
	/* every lasti the table covers, as a walk would ask */
	for (int64_t l = 0; l < 64; l++)
		(void)cw_linetable_311(tab, len, first, l);
	free(tab);
	return 0;
}
