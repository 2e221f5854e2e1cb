/* fileset: a bounded set of files by identity (device, inode), so a library
 * copy is listed or attached once however many paths, links or processes
 * reach it. Past CW_FILESET_MAX files new ones are not kept: they read as
 * unseen, and are reported again rather than hidden. */
#ifndef CW_UTIL_FILESET_H
#define CW_UTIL_FILESET_H

#include <stdint.h>

#define CW_FILESET_MAX 256

struct cw_fileset {
	struct {
		uint64_t dev, ino;
	} f[CW_FILESET_MAX];
	int n;
};

/* 1 when (dev, ino) is in s. */
int cw_fileset_has(const struct cw_fileset *s, uint64_t dev, uint64_t ino);

/* Adds (dev, ino) while there is room. Returns 1 at its first sight (also
 * when the set is full), 0 when it was in s already. */
int cw_fileset_add(struct cw_fileset *s, uint64_t dev, uint64_t ino);

#endif
