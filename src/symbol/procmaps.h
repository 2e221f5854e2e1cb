/* /proc/PID/maps, parsed: which file backs which address range. */
#ifndef CW_SYMBOL_PROCMAPS_H
#define CW_SYMBOL_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cw_map {
	uint64_t start, end, off;
	int exec;        /* r-x mapping */
	char path[256];  /* "" for anonymous mappings; as the target sees it */
};

/* Reads the mappings of pid (capped at 65536 entries). Returns the count
 * (>= 0) with *out malloc'd, or -errno (-ESRCH for a gone process). */
int cw_procmaps_read(pid_t pid, struct cw_map **out);

/* The mapping holding addr, or NULL. */
const struct cw_map *cw_procmaps_find(const struct cw_map *maps, int n, uint64_t addr);

/* Path to open the target's file from here: /proc/PID/root + path, so a
 * process in another mount namespace (a container) resolves its own file.
 * Returns 0 or -ENAMETOOLONG. */
int cw_procmaps_host_path(pid_t pid, const char *path, char *buf, size_t len);

/* Load bias of the object whose mappings carry this path: the start of
 * its offset-0 mapping minus the first PT_LOAD's page-aligned vaddr
 * (min_vaddr). Returns 0 or -ENOENT. */
int cw_procmaps_bias(const struct cw_map *maps, int n, const char *path, uint64_t min_vaddr, uint64_t *bias);

#endif
