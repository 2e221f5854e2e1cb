#define _GNU_SOURCE
#include "symbol/dwstack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symbol/procmaps.h"
#include "util/root_open.h"

#ifdef CW_NO_LIBDW

int cw_dwstack_available(void)
{
	return 0;
}

int cw_dwstack_open(pid_t pid, struct cw_dwstack **out)
{
	(void)pid;
	*out = NULL;
	return -ENOTSUP;
}

void cw_dwstack_freeze(struct cw_dwstack *d)
{
	(void)d;
}

void cw_dwstack_close(struct cw_dwstack *d)
{
	(void)d;
}

int cw_dwstack_thread(struct cw_dwstack *d, pid_t tid, uint64_t *ips, int max, uint64_t deadline_ns,
		      int *truncated, char *why, size_t whylen)
{
	(void)d; (void)tid; (void)ips; (void)max; (void)deadline_ns; (void)truncated;
	snprintf(why, whylen, "this build has no DWARF unwinder");
	return -ENOTSUP;
}

#else

#include <elfutils/libdwfl.h>

struct cw_dwstack {
	pid_t pid;
	int frozen; /* no file is opened any more: the process is stopped */
	Dwfl *dwfl;
	struct cw_map *maps; /* the target's view, for opening its files */
	int nmaps;
};

/* libdwfl's callbacks carry no context of ours; dumps are serialized by
 * where/where.c, and this names the process being unwound. */
static __thread struct cw_dwstack *cur;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cw_dwstack_available(void)
{
	return 1;
}

/* The module's file as the target sees it: through /proc/PID/root when
 * that is the mapped inode, else the mapping itself (map_files). The name
 * libdwfl passes is the path as /proc/PID/maps prints it to us, which for a
 * process in another mount namespace names a file of that namespace, so
 * the mapping at the module's base address decides, not the name. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, char **file_name,
		    Elf **elfp)
{
	const struct cw_map *m;
	char path[600];
	int fd;

	if (!cur || modname[0] != '/') /* [vdso]: read from memory by libdwfl */
		return dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
	if (cur->frozen)
		return -1;
	m = cw_procmaps_find(cur->maps, cur->nmaps, base);
	if (!m || !m->path[0])
		return -1;
	fd = cw_procmaps_open(cur->pid, m, path, sizeof(path));
	if (fd < 0)
		return -1;
	*file_name = strdup(path);
	return fd;
}

/* A separate debug file by build-id, in the target's root
 * (/usr/lib/debug/.build-id/xx/yyyy.debug): its .debug_frame is used when
 * .eh_frame does not cover a pc. libdwfl checks the build-id it reads
 * back. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	char id[130], path[300], shown[340];
	int n, i, fd;

	(void)userdata; (void)modname; (void)base; (void)file_name; (void)debuglink_file; (void)debuglink_crc;
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (!cur || cur->frozen || n < 2 || n > 64)
		return -1;
	for (i = 0; i < n; i++)
		snprintf(id + 2 * i, sizeof(id) - 2 * (size_t)i, "%02x", bits[i]);
	if (cw_build_id_debug_path(id, path, sizeof(path)))
		return -1;
	/* inside the target's root: it chooses what lies there */
	fd = cw_proc_root_open(cur->pid, path, CW_ROOT_DEBUG_MAX);
	if (fd < 0)
		return -1;
	snprintf(shown, sizeof(shown), "/proc/%d/root%s", (int)cur->pid, path);
	*debuginfo_file_name = strdup(shown);
	return fd;
}

/* Opens a module's object and, when it has no DWARF of its own, its
 * build-id debug file: done while the process runs, so that no file of
 * its is opened while it is held stopped. */
static int preload(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
	Dwarf_Addr bias;

	(void)userdata; (void)name; (void)start; (void)arg;
	if (dwfl_module_getelf(mod, &bias))
		(void)dwfl_module_getdwarf(mod, &bias);
	return DWARF_CB_OK;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
};

int cw_dwstack_open(pid_t pid, struct cw_dwstack **out)
{
	struct cw_dwstack *d;
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->pid = pid;
	err = cw_procmaps_read(pid, &d->maps);
	if (err < 0)
		goto fail;
	d->nmaps = err;
	d->dwfl = dwfl_begin(&callbacks);
	if (!d->dwfl) {
		err = -ENOMEM;
		goto fail;
	}
	cur = d;
	dwfl_report_begin(d->dwfl);
	err = dwfl_linux_proc_report(d->dwfl, pid);
	if (dwfl_report_end(d->dwfl, NULL, NULL) || err) {
		err = err > 0 ? -err : -ENOEXEC;
		goto fail;
	}
	dwfl_getmodules(d->dwfl, preload, NULL, 0);
	/* the threads are held stopped by cw_threads_stop before they are
	 * unwound: libdwfl neither attaches nor detaches them */
	err = dwfl_linux_proc_attach(d->dwfl, pid, true);
	if (err) {
		err = err > 0 ? -err : -ENOEXEC;
		goto fail;
	}
	cur = NULL;
	*out = d;
	return 0;
fail:
	cur = NULL;
	cw_dwstack_close(d);
	return err;
}

void cw_dwstack_freeze(struct cw_dwstack *d)
{
	if (d)
		d->frozen = 1;
}

void cw_dwstack_close(struct cw_dwstack *d)
{
	if (!d)
		return;
	if (d->dwfl)
		dwfl_end(d->dwfl);
	free(d->maps);
	free(d);
}

struct walk {
	uint64_t *ips;
	int n, max, truncated;
	uint64_t deadline;
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;

	if (w->n >= w->max || now_ns() > w->deadline) {
		w->truncated = 1;
		return DWARF_CB_ABORT;
	}
	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	w->ips[w->n++] = pc;
	return DWARF_CB_OK;
}

int cw_dwstack_thread(struct cw_dwstack *d, pid_t tid, uint64_t *ips, int max, uint64_t deadline_ns,
		      int *truncated, char *why, size_t whylen)
{
	struct walk w = { .ips = ips, .max = max, .deadline = deadline_ns };

	*truncated = 0;
	cur = d;
	/* -1 at the end of the stack is normal (libdwfl.h): only a walk that
	 * yields no frame at all is an error */
	if (dwfl_getthread_frames(d->dwfl, tid, frame_cb, &w) < 0 && !w.n)
		snprintf(why, whylen, "%s", dwfl_errmsg(-1));
	cur = NULL;
	*truncated = w.truncated;
	return w.n ? w.n : -ENOEXEC;
}

#endif
