/* /proc/PID/maps, parsed: which file backs which address range. */
#ifndef CW_SYMBOL_PROCMAPS_H
#define CW_SYMBOL_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cw_map {
	uint64_t start, end, off;
	uint64_t inode;  /* of the backing file, 0 anonymous */
	int exec;        /* r-x mapping */
	char path[256];  /* "" for anonymous mappings; as the target sees it */
};

/* Reads the mappings of pid (capped at 65536 entries). Paths are as the
 * target sees them: the kernel prints them relative to the reader's root,
 * so a chroot'ed target's root prefix is removed. Returns the count (>= 0)
 * with *out malloc'd, or -errno (-ESRCH for a gone process). */
int cw_procmaps_read(pid_t pid, struct cw_map **out);

/* Rewrites path (as this process sees it, e.g. a readlink of
 * /proc/PID/exe) into the target's view by removing the target's root
 * prefix. */
void cw_procmaps_target_view(pid_t pid, char *path, size_t len);

/* The mapping holding addr, or NULL. */
const struct cw_map *cw_procmaps_find(const struct cw_map *maps, int n, uint64_t addr);

/* Opens the file behind mapping m, never the host path: path inside the
 * process's root (util/root_open.h: links resolved within it, a regular
 * file only, non-blocking) when that is the mapped inode, else
 * /proc/PID/map_files/START-END (the mapped file itself: deleted,
 * replaced or overmounted since; the same regular-file rule). name gets
 * a path naming it for messages. Returns the descriptor or -errno
 * (-ENOENT when neither is the mapped file). */
int cw_procmaps_open(pid_t pid, const struct cw_map *m, char *name, size_t len);

/* Load bias of the object whose mappings carry this path: the start of
 * its offset-0 mapping minus the first PT_LOAD's page-aligned vaddr
 * (min_vaddr). Returns 0 or -ENOENT. */
int cw_procmaps_bias(const struct cw_map *maps, int n, const char *path, uint64_t min_vaddr, uint64_t *bias);

#endif
