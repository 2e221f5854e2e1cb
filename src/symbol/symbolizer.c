#include "symbol/symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbol/demangle.h"
#include "symbol/procmaps.h"
#include "symbol/symfile.h"
#include "util/root_open.h"

#define MAX_PROCS 64
#define MAX_FILES 256

struct file_slot {
	char key[300]; /* "b:<build-id>" or "p:<path>@<dev>:<ino>" */
	struct cw_symfile *sf;
	int owned; /* path slots alias the build-id slot's index */
};

struct proc_maps {
	uint32_t pid;
	struct cw_map *maps;
	int n;
};

struct cw_symz {
	struct proc_maps procs[MAX_PROCS];
	struct file_slot files[MAX_FILES];
	int nfiles;
};

int cw_symz_new(struct cw_symz **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void cw_symz_free(struct cw_symz *z)
{
	int i;

	if (!z)
		return;
	for (i = 0; i < MAX_PROCS; i++)
		free(z->procs[i].maps);
	for (i = 0; i < z->nfiles; i++)
		if (z->files[i].owned)
			cw_symfile_free(z->files[i].sf);
	free(z);
}

void cw_symz_forget(struct cw_symz *z, uint32_t pid)
{
	struct proc_maps *pm = &z->procs[pid % MAX_PROCS];

	if (pm->pid == pid) {
		free(pm->maps);
		memset(pm, 0, sizeof(*pm));
	}
}

static int load_maps(struct proc_maps *pm, uint32_t pid)
{
	struct cw_map *maps;
	int n = cw_procmaps_read((pid_t)pid, &maps);

	if (n < 0)
		return n;
	free(pm->maps);
	pm->pid = pid;
	pm->maps = maps;
	pm->n = n;
	return 0;
}

static int add_slot(struct cw_symz *z, const char *key, struct cw_symfile *sf, int owned)
{
	if (z->nfiles == MAX_FILES)
		return -ENOSPC;
	snprintf(z->files[z->nfiles].key, sizeof(z->files[0].key), "%s", key);
	z->files[z->nfiles].sf = sf;
	z->files[z->nfiles].owned = owned;
	z->nfiles++;
	return 0;
}

/* A stripped file's full symbol table from its build-id debug file, looked
 * up in the process's own root (a container's debug files are its own):
 * /usr/lib/debug/.build-id/xx/yyyy.debug there, opened inside that root
 * (util/root_open.h: the process chooses what lies at that path). */
static void add_debug_file(uint32_t pid, struct cw_symfile *sf)
{
	char path[300];
	int fd;

	if (cw_build_id_debug_path(cw_symfile_build_id(sf), path, sizeof(path)))
		return;
	fd = cw_proc_root_open((pid_t)pid, path, CW_ROOT_DEBUG_MAX);
	if (fd < 0)
		return;
	cw_symfile_add_debug_fd(sf, fd); /* none, or not this file's: keep what we have */
	close(fd);
}

/* Opens (or finds) the indexed file behind a mapping. The build-id is only
 * known after indexing, so a file is first matched by (path, dev, inode);
 * a new path whose build-id equals an indexed file's reuses that index. */
static struct cw_symfile *file_for(struct cw_symz *z, uint32_t pid, const struct cw_map *m)
{
	char host[512], key[300], bkey[300];
	struct cw_symfile *sf;
	struct stat st;
	int i, fd, err;

	fd = cw_procmaps_open((pid_t)pid, m, host, sizeof(host));
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	snprintf(key, sizeof(key), "p:%s@%" PRIu64 ":%" PRIu64, m->path, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	for (i = 0; i < z->nfiles; i++)
		if (!strcmp(z->files[i].key, key)) {
			close(fd);
			return z->files[i].sf;
		}
	if (z->nfiles + 2 > MAX_FILES) {
		close(fd);
		return NULL;
	}
	err = cw_symfile_open_fd(&sf, fd);
	close(fd);
	if (err) {
		add_slot(z, key, NULL, 0); /* remember the failure */
		return NULL;
	}
	if (!cw_symfile_build_id(sf)[0]) {
		add_slot(z, key, sf, 1);
		return sf;
	}
	if (!cw_symfile_has_symtab(sf))
		add_debug_file(pid, sf);
	snprintf(bkey, sizeof(bkey), "b:%s", cw_symfile_build_id(sf));
	for (i = 0; i < z->nfiles; i++) {
		if (!strcmp(z->files[i].key, bkey)) {
			cw_symfile_free(sf);
			sf = z->files[i].sf;
			add_slot(z, key, sf, 0);
			return sf;
		}
	}
	add_slot(z, bkey, sf, 1);
	add_slot(z, key, sf, 0);
	return sf;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int cw_symz_symbolize(struct cw_symz *z, uint32_t pid, uint64_t ip, char *out, size_t outlen)
{
	struct proc_maps *pm = &z->procs[pid % MAX_PROCS];
	const struct cw_map *m = NULL;
	struct cw_symfile *sf;
	uint64_t vaddr, off;
	const char *name;
	char dm[512];
	int err;

	if (pm->pid == pid && pm->maps)
		m = cw_procmaps_find(pm->maps, pm->n, ip);
	if (!m) {
		err = load_maps(pm, pid);
		if (err)
			return err;
		m = cw_procmaps_find(pm->maps, pm->n, ip);
	}
	if (!m)
		return -ENOENT;
	if (!m->path[0]) {
		snprintf(out, outlen, "[anon]+0x%" PRIx64, ip - m->start);
		return 0;
	}
	sf = file_for(z, pid, m);
	if (!sf || cw_symfile_offset_to_vaddr(sf, ip - m->start + m->off, &vaddr)) {
		snprintf(out, outlen, "%s+0x%" PRIx64, base_name(m->path), ip - m->start + m->off);
		return 0;
	}
	if (cw_symfile_addr2sym(sf, vaddr, &name, &off)) {
		snprintf(out, outlen, "%s+0x%" PRIx64, base_name(m->path), vaddr);
		return 0;
	}
	cw_demangle(name, dm, sizeof(dm));
	snprintf(out, outlen, "%s!%s+0x%" PRIx64, base_name(m->path), dm, off);
	return 0;
}
