/* Fuzzes the pure part of opening a file inside a process's root
 * (util/root_open.h): the build-id debug path made from a build-id a
 * process's ELF file declares, and the hand walk's component handling
 * (components taken one by one, link targets spliced in front).
 * The input's first byte picks the part; the rest is split at NUL bytes
 * into a build-id or a path and the link targets met on the way.
 * Invariants: a build-id path is the fixed prefix, two hex digits, '/',
 * hex digits and ".debug", nothing else; a component is never empty,
 * ".", ".." nor holds a '/'; the depth under the root never goes below
 * zero; every walk ends, within a bound set by the links allowed. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/root_open.h"

#define PREFIX "/usr/lib/debug/.build-id/"

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void build_id(const char *id)
{
	char out[300];
	size_t n, pl = strlen(PREFIX), i;
	int rc = cw_build_id_debug_path(id, out, sizeof(out));

	if (rc) {
		assert(rc == -EINVAL || rc == -ENAMETOOLONG);
		return;
	}
	n = strlen(out);
	assert(!strncmp(out, PREFIX, pl));
	assert(n > pl + 3 + 6 && !strcmp(out + n - 6, ".debug"));
	assert(is_hex(out[pl]) && is_hex(out[pl + 1]) && out[pl + 2] == '/');
	for (i = pl + 3; i < n - 6; i++)
		assert(is_hex(out[i]));
	assert(!strstr(out, ".."));
}

static void walk(const char *path, const char *const *links, int nlinks)
{
	struct cw_pathwalk w;
	char name[256];
	int depth = 0, used = 0, steps = 0, rc;

	if (cw_pathwalk_init(&w, path))
		return;
	for (;;) {
		rc = cw_pathwalk_next(&w, name, sizeof(name));
		/* each step consumes input: the buffer's length per splice */
		assert(++steps <= (CW_WALK_MAX_LINKS + 1) * CW_WALK_PATH_MAX);
		if (rc == CW_WALK_END || rc == -ENAMETOOLONG)
			break;
		if (rc == CW_WALK_UP) {
			if (depth)
				depth--;
			assert(depth >= 0);
			continue;
		}
		assert(rc == CW_WALK_NAME);
		assert(name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, ".."));
		assert(strlen(name) < sizeof(name));
		/* the names of odd length are links, while targets last */
		if ((strlen(name) & 1) && used < nlinks) {
			rc = cw_pathwalk_link(&w, links[used++]);
			if (rc < 0) {
				assert(rc == -ELOOP || rc == -ENAMETOOLONG);
				break;
			}
			if (rc == 1)
				depth = 0;
			continue;
		}
		if (cw_pathwalk_more(&w))
			depth++;
	}
	assert(w.links <= CW_WALK_MAX_LINKS + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *parts[64];
	int n = 0;
	size_t i;

	if (!size)
		return 0;
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	parts[n++] = buf;
	for (i = 0; i + 1 < size && n < 64; i++)
		if (!buf[i])
			parts[n++] = buf + i + 1;
	if (data[0] & 1) {
		build_id(buf);
	} else {
		/* the same links again and again: the link bound is what ends it */
		const char *links[64];
		int k, nl = 0;

		for (k = 0; nl < 64; k++)
			links[nl++] = n > 1 ? parts[1 + k % (n - 1)] : "a";
		walk(buf, links, data[0] & 2 ? nl : (n > 1 ? n - 1 : 0));
	}
	free(buf);
	return 0;
}
