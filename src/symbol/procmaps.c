#include "symbol/procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MAPS 65536

int cw_procmaps_read(pid_t pid, struct cw_map **out)
{
	char path[64], line[4096 + 256];
	struct cw_map *maps = NULL, *nm;
	int n = 0, cap = 0;
	FILE *fp;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), fp) && n < MAX_MAPS) {
		struct cw_map m = { 0 };
		char perms[8] = "", *p;
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m.start, &m.end, perms, &m.off,
			   &pos) < 4)
			continue;
		m.exec = perms[0] == 'r' && perms[2] == 'x';
		p = line + pos;
		p[strcspn(p, "\n")] = '\0';
		if (*p == '/')
			snprintf(m.path, sizeof(m.path), "%s", p);
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			nm = realloc(maps, (size_t)cap * sizeof(*maps));
			if (!nm) {
				free(maps);
				fclose(fp);
				return -ENOMEM;
			}
			maps = nm;
		}
		maps[n++] = m;
	}
	fclose(fp);
	*out = maps;
	return n;
}

const struct cw_map *cw_procmaps_find(const struct cw_map *maps, int n, uint64_t addr)
{
	int lo = 0, hi = n;

	/* /proc/PID/maps is sorted by address */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && maps[lo].start <= addr && addr < maps[lo].end ? &maps[lo] : NULL;
}

int cw_procmaps_host_path(pid_t pid, const char *path, char *buf, size_t len)
{
	int r = snprintf(buf, len, "/proc/%d/root%s", (int)pid, path);

	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

int cw_procmaps_bias(const struct cw_map *maps, int n, const char *path, uint64_t min_vaddr, uint64_t *bias)
{
	int i;

	for (i = 0; i < n; i++) {
		if (maps[i].off == 0 && !strcmp(maps[i].path, path)) {
			*bias = maps[i].start - (min_vaddr & ~0xfffull);
			return 0;
		}
	}
	return -ENOENT;
}
