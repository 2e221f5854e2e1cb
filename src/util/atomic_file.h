/* Files that appear whole or not at all: written to PATH.tmp-XXXXXX beside
 * the target, then renamed over it. Used by export (the command and the MCP
 * export_timeline tool). */
#ifndef CW_UTIL_ATOMIC_FILE_H
#define CW_UTIL_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

struct cw_atomic_file {
	FILE *f;
	char *tmp;
	char *path;
};

/* Opens the temporary file. Returns 0 or -errno with err filled. */
int cw_atomic_open(struct cw_atomic_file *a, const char *path, char *err, size_t errlen);
/* ok: close with the usual 0666 & ~umask mode and rename over the target;
 * !ok: close and remove. Returns 0 or -errno with err filled. */
int cw_atomic_close(struct cw_atomic_file *a, int ok, char *err, size_t errlen);

#endif
