/* Fuzzes the header checks /mcp makes before any JSON is read: the Origin
 * and Host parsing of the DNS-rebinding protection. Input: Origin, a NUL,
 * Host (either may be absent: no NUL means no Host; a leading 0x01 means no
 * Origin); the last byte's low bit says whether the listener is loopback. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *origin, *host = NULL, why[256];
	int loopback, rc;

	if (size < 1)
		return 0;
	loopback = data[size - 1] & 1;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data, size - 1);
	buf[size - 1] = 0;
	origin = buf;
	if (strlen(buf) < size - 1)
		host = buf + strlen(buf) + 1;
	if (origin[0] == 1)
		origin = NULL;
	rc = cw_origin_check(origin, host, loopback, why, sizeof(why));
	if (rc && !why[0])
		__builtin_trap(); /* a refusal always says why */
	/* No Origin and no Host: nothing to refuse. */
	if (!origin && !host && rc)
		__builtin_trap();
	free(buf);
	return 0;
}
