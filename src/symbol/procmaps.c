#include "symbol/procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/root_open.h"

#define MAX_MAPS 65536

/* The target's root directory as this process sees it ("" for "/", for
 * an unreadable link, or for a root outside ours: then the kernel already
 * prints paths from the target's own mount namespace). */
static void root_of(pid_t pid, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = readlink(link, buf, len - 1);
	if (n <= 1 || buf[0] != '/' || (size_t)n >= len - 1) {
		buf[0] = '\0';
		return;
	}
	buf[n] = '\0';
}

void cw_procmaps_target_view(pid_t pid, char *path, size_t len)
{
	char root[4096];
	size_t rl;

	root_of(pid, root, sizeof(root));
	rl = strlen(root);
	if (rl && !strncmp(path, root, rl) && path[rl] == '/' && len > 0)
		memmove(path, path + rl, strlen(path + rl) + 1);
}

int cw_procmaps_read(pid_t pid, struct cw_map **out)
{
	char path[64], line[4096 + 256], root[4096];
	struct cw_map *maps = NULL, *nm;
	int n = 0, cap = 0;
	size_t rootlen;
	FILE *fp;

	*out = NULL;
	root_of(pid, root, sizeof(root));
	rootlen = strlen(root);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), fp) && n < MAX_MAPS) {
		struct cw_map m = { 0 };
		char perms[8] = "", *p;
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %" SCNu64 " %n", &m.start, &m.end, perms,
			   &m.off, &m.inode, &pos) < 5)
			continue;
		m.exec = perms[0] == 'r' && perms[2] == 'x';
		p = line + pos;
		p[strcspn(p, "\n")] = '\0';
		if (rootlen && !strncmp(p, root, rootlen) && p[rootlen] == '/')
			p += rootlen;
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

int cw_procmaps_open(pid_t pid, const struct cw_map *m, char *name, size_t len)
{
	struct stat st;
	char mf[96];
	int fd;

	if (m->path[0]) {
		fd = cw_proc_root_open(pid, m->path, CW_ROOT_ELF_MAX);
		if (fd >= 0 && !fstat(fd, &st) && (!m->inode || (uint64_t)st.st_ino == m->inode)) {
			snprintf(name, len, "/proc/%d/root%s", (int)pid, m->path);
			return fd;
		}
		if (fd >= 0)
			close(fd);
	}
	/* the kernel's link to the mapped file: the process cannot redirect it */
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
	fd = cw_open_regular(mf, CW_ROOT_ELF_MAX);
	if (fd < 0)
		return fd == -EINVAL || fd == -EFBIG ? fd : -ENOENT;
	snprintf(name, len, "%s", mf);
	return fd;
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
