/* Files that appear whole or not at all, under the output-file rule
 * (util/out_path.h): a new name or a regular file is written to
 * NAME.tmp-XXXXXX beside it and renamed over it; a device or FIFO the rule
 * allows is written in place. Used by export (the command and the MCP
 * export_timeline tool). */
#ifndef CW_UTIL_ATOMIC_FILE_H
#define CW_UTIL_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "util/out_path.h"

struct cw_atomic_file {
	FILE *f;
	struct cw_out out;
};

/* Opens path under rule r. Returns 0 or -errno with err filled (see
 * cw_out_resolve for what is refused). */
int cw_atomic_open(struct cw_atomic_file *a, const char *path, const struct cw_out_rule *r, char *err,
		   size_t errlen);
/* The same for a path confined to dir (cw_out_resolve_beneath). */
int cw_atomic_open_beneath(struct cw_atomic_file *a, const char *dir, const char *path, const struct cw_out_rule *r,
			   char *err, size_t errlen);
/* ok: close and rename over the target; !ok: close and remove. Returns 0
 * or -errno with err filled. */
int cw_atomic_close(struct cw_atomic_file *a, int ok, char *err, size_t errlen);

#endif
