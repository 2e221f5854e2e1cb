/* live_discover: discover.bpf.c loaded once, a thread that attaches what it
 * reports and resumes what it stopped, and a watchdog for the agent's
 * death. */
#define _GNU_SOURCE
#include "loader/live_discover.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/discover.bpf.h"
#include "discover.skel.h"
#include "loader/elfsyms.h"
#include "loader/kernel_features.h"
#include "loader/libbpf_log.h"
#include "util/timeutil.h"

#define MAX_LOADERS 64
#define LAT_KEEP 4096
#define HELD_MAX 1024
/* A stop older than this whose report never arrived (ring full) is
 * handled from the held map. Reports arrive within milliseconds. */
#define SWEEP_AGE_NS (250 * 1000000ull)
#define SWEEP_EVERY_NS (100 * 1000000ull)

struct cw_live_discover {
	struct discover_bpf *skel;
	struct cw_live_opts o;
	struct bpf_link *exec_link;
	struct bpf_link *loader_links[MAX_LOADERS];
	struct cw_disc_file loaders[MAX_LOADERS]; /* hooked, by stat identity */
	int nloaders;
	int walk; /* the VMA iterator programs (6.7), else the *_maps ones */
	struct ring_buffer *rb;
	pthread_t thread;
	int running;
	volatile int stop;
	pthread_mutex_t lock; /* loaders, counters, latencies */
	uint64_t swept, attached, late;
	uint32_t lat_us[LAT_KEEP];
	size_t nlat;
	uint64_t lat_max_us;
	pid_t watchdog;
	int wd_fd; /* write end of the watchdog's pipe, never written */
};

static const char *const loader_globs[] = {
	"/lib64/ld-linux*.so*", "/lib/ld-linux*.so*", "/lib/*-linux-gnu/ld-linux*.so*",
	"/usr/lib/*-linux-gnu/ld-linux*.so*", "/usr/lib64/ld-linux*.so*", "/lib/ld-musl-*.so.1", NULL,
};

int cw_live_open(struct cw_live_discover **out, const struct cw_live_opts *o, char *err, size_t errlen)
{
	struct cw_live_discover *ld;
	int rc;

	*out = NULL;
	ld = calloc(1, sizeof(*ld));
	if (!ld)
		return -ENOMEM;
	ld->o = *o;
	ld->wd_fd = -1;
	pthread_mutex_init(&ld->lock, NULL);
	ld->skel = discover_bpf__open();
	if (!ld->skel) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot open the discovery bpf object: %s", strerror(-rc));
		goto fail;
	}
	/* Without the VMA iterator (before 6.7) the *_maps programs stop the
	 * process at every library load and exec and this side reads its
	 * maps: affordable for the processes trace follows (a launched
	 * command, --pid), not for every process of the host, whose libraries
	 * the one-second rescan finds instead. */
	ld->walk = cw_kfeature_has(CW_KF_VMA_ITER);
	if (!ld->walk && !o->filter_tracked) {
		snprintf(err, errlen, "this kernel has no %s (Linux %s)", cw_kfeature_defs[CW_KF_VMA_ITER].what,
			 cw_kfeature_defs[CW_KF_VMA_ITER].since);
		rc = -EOPNOTSUPP;
		goto fail;
	}
	bpf_program__set_autoload(ld->skel->progs.cw_loader_state, ld->walk);
	bpf_program__set_autoload(ld->skel->progs.cw_exec_loader, ld->walk);
	bpf_program__set_autoload(ld->skel->progs.cw_loader_state_maps, !ld->walk);
	bpf_program__set_autoload(ld->skel->progs.cw_exec_loader_maps, !ld->walk);
	ld->skel->rodata->cfg_filter_tracked = o->filter_tracked ? 1 : 0;
	ld->skel->rodata->cfg_hold = o->hold ? 1 : 0;
	ld->skel->rodata->cfg_self_tgid = (__u32)getpid();
	if ((o->tracked_fd >= 0 && (rc = bpf_map__reuse_fd(ld->skel->maps.cw_tracked, o->tracked_fd))) ||
	    (o->drops_fd >= 0 && (rc = bpf_map__reuse_fd(ld->skel->maps.cw_drops, o->drops_fd))) ||
	    (o->stats_fd >= 0 && (rc = bpf_map__reuse_fd(ld->skel->maps.cw_stats, o->stats_fd)))) {
		snprintf(err, errlen, "cannot share the tracked-process maps: %s", strerror(-rc));
		goto fail;
	}
	cw_libbpf_log_reset();
	rc = discover_bpf__load(ld->skel);
	if (rc) {
		char why[256];

		cw_libbpf_log_reason(why, sizeof(why));
		snprintf(err, errlen, "cannot load the discovery programs: %s%s%s", strerror(-rc), why[0] ? ": " : "",
			 why);
		goto fail;
	}
	*out = ld;
	return 0;
fail:
	cw_live_close(ld, NULL);
	return rc;
}

void cw_live_mark(struct cw_live_discover *ld, uint64_t kdev, uint64_t ino)
{
	struct cw_disc_file f = { .dev = kdev, .ino = ino };
	__u32 v = CW_DISC_SEEN_HOOKED;

	if (ld)
		bpf_map_update_elem(bpf_map__fd(ld->skel->maps.disc_seen), &f, &v, BPF_ANY);
}

void cw_live_mark_path(struct cw_live_discover *ld, const char *path)
{
	struct stat st;

	if (ld && !stat(path, &st))
		cw_live_mark(ld, cw_kdev(st.st_dev), st.st_ino);
}

/* Hooks _dl_debug_state of the loader at path. Returns 1 hooked now, 0
 * hooked before, or -errno (-ENOENT: no such symbol). */
static int cw_live_hook_loader(struct cw_live_discover *ld, const char *path)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct cw_elf_sym sym;
	struct cw_elf *e = NULL;
	struct bpf_link *l;
	struct stat st;
	uint64_t off;
	int i, rc;

	if (stat(path, &st))
		return -errno;
	pthread_mutex_lock(&ld->lock);
	for (i = 0; i < ld->nloaders; i++)
		if (ld->loaders[i].dev == (uint64_t)st.st_dev && ld->loaders[i].ino == (uint64_t)st.st_ino) {
			rc = 0;
			goto out;
		}
	if (ld->nloaders == MAX_LOADERS) {
		rc = -ENOSPC;
		goto out;
	}
	/* glibc and musl both export it (GLIBC_PRIVATE in glibc). */
	rc = cw_elf_open(&e, path);
	if (rc)
		goto out;
	/* /lib/ld-linux-aarch64.so.1 on an x86-64 host with qemu-user. */
	if (!cw_elf_native(e)) {
		rc = -ENOEXEC;
		goto out;
	}
	if ((rc = cw_elf_find_sym(e, "_dl_debug_state", &sym)) || (rc = cw_elf_vaddr_to_offset(e, sym.value, &off)))
		goto out;
	l = bpf_program__attach_uprobe_opts(ld->walk ? ld->skel->progs.cw_loader_state
					       : ld->skel->progs.cw_loader_state_maps,
					    -1, path, off, &uo);
	if (!l) {
		rc = errno ? -errno : -EINVAL;
		goto out;
	}
	ld->loader_links[ld->nloaders] = l;
	ld->loaders[ld->nloaders].dev = st.st_dev;
	ld->loaders[ld->nloaders].ino = st.st_ino;
	ld->nloaders++;
	rc = 1;
out:
	pthread_mutex_unlock(&ld->lock);
	cw_elf_close(e);
	if (rc >= 0) {
		struct cw_disc_file f = { .dev = cw_kdev(st.st_dev), .ino = st.st_ino };
		__u32 v = CW_DISC_SEEN_LOADER;

		bpf_map_update_elem(bpf_map__fd(ld->skel->maps.disc_seen), &f, &v, BPF_ANY);
	}
	return rc;
}

/* Resumes pid if discovery stopped it. The entry is removed first: the
 * watchdog must not signal a pid after it was handed back (reuse). */
static void resume(struct cw_live_discover *ld, uint32_t pid)
{
	if (!bpf_map_delete_elem(bpf_map__fd(ld->skel->maps.disc_held), &pid))
		kill((pid_t)pid, SIGCONT);
}

/* The pids in the held map (fd), at most HELD_MAX. Plain syscalls only:
 * the watchdog runs this too. */
static int held_pids(int fd, __u32 *keys)
{
	__u32 k, next;
	int n = 0, more;

	more = !bpf_map_get_next_key(fd, NULL, &k);
	while (more && n < HELD_MAX) {
		keys[n++] = k;
		more = !bpf_map_get_next_key(fd, &k, &next);
		k = next;
	}
	return n;
}

/* Every stopped process in the held map (fd), resumed. Also the
 * watchdog's body: plain syscalls only. */
static int resume_all(int fd)
{
	__u32 keys[HELD_MAX];
	int n = held_pids(fd, keys), i;

	for (i = 0; i < n; i++)
		if (!bpf_map_delete_elem(fd, &keys[i]))
			kill((pid_t)keys[i], SIGCONT);
	return n;
}

struct on_copy_ctx {
	struct cw_live_discover *ld;
	int held;
};

static int on_copy(void *ctx, const struct cw_lib_copy *lib)
{
	struct on_copy_ctx *c = ctx;
	struct cw_live_discover *ld = c->ld;
	int rc = ld->o.attach ? ld->o.attach(ld->o.ctx, lib) : -ENOSYS;

	if (rc > 0) {
		pthread_mutex_lock(&ld->lock);
		ld->attached++;
		/* The process ran on with the copy mapped and unprobed: calls
		 * it made before now are not recorded. */
		if (!c->held)
			ld->late++;
		pthread_mutex_unlock(&ld->lock);
	}
	cw_live_mark(ld, cw_kdev(lib->dev), lib->ino);
	return 0;
}

static void note_latency(struct cw_live_discover *ld, uint64_t ts_ns)
{
	uint64_t now = cw_monotonic_ns(), us = now > ts_ns ? (now - ts_ns) / 1000 : 0;

	pthread_mutex_lock(&ld->lock);
	ld->lat_us[ld->nlat++ % LAT_KEEP] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	if (us > ld->lat_max_us)
		ld->lat_max_us = us;
	pthread_mutex_unlock(&ld->lock);
}

/* Right after exec (no VMA iterator): every executable file mapping but
 * the image itself is its dynamic loader, whose _dl_debug_state is hooked
 * (a file without it is skipped by cw_live_hook_loader). */
static void hook_mapped_loaders(struct cw_live_discover *ld, uint32_t pid)
{
	char maps[64], exe[PATH_MAX], line[PATH_MAX + 128];
	ssize_t n;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/exe", pid);
	n = readlink(maps, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char perms[8], *path = strchr(line, '/'), root[PATH_MAX + 32];
		size_t len;

		if (sscanf(line, "%*x-%*x %7s", perms) != 1 || perms[2] != 'x' || !path)
			continue;
		len = strcspn(path, "\n");
		path[len] = '\0';
		if (!strcmp(path, exe))
			continue;
		/* the process's own file, through its root (a container's ld.so) */
		snprintf(root, sizeof(root), "/proc/%u/root%s", pid, path);
		cw_live_hook_loader(ld, root);
	}
	fclose(f);
}

/* One stopped or reporting process: hook its new loader or attach its new
 * copies, mark the files seen, resume it. */
static void handle(struct cw_live_discover *ld, uint32_t pid, uint32_t kind, const struct cw_disc_file *files,
		   uint32_t nfiles, int held, uint64_t ts_ns)
{
	struct on_copy_ctx c = { .ld = ld, .held = held };
	char path[PATH_MAX];
	uint32_t i;

	if (kind == CW_DISC_EXEC && !ld->walk) {
		hook_mapped_loaders(ld, pid);
	} else if (kind == CW_DISC_EXEC) {
		for (i = 0; i < nfiles; i++)
			if (!cw_discover_find_file(pid, files[i].dev, files[i].ino, path, sizeof(path)))
				cw_live_hook_loader(ld, path);
	} else {
		cw_discover_pid(pid, on_copy, &c);
	}
	/* Whatever came of it, these files stop no process again: one that
	 * cannot be attached would otherwise stop every process loading it. */
	for (i = 0; i < nfiles; i++) {
		struct cw_disc_file f = files[i];
		__u32 v = kind == CW_DISC_EXEC ? CW_DISC_SEEN_LOADER : CW_DISC_SEEN_HOOKED;

		bpf_map_update_elem(bpf_map__fd(ld->skel->maps.disc_seen), &f, &v, BPF_ANY);
	}
	if (held)
		resume(ld, pid);
	if (kind == CW_DISC_LOAD)
		note_latency(ld, ts_ns);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct cw_live_discover *ld = ctx;
	const struct cw_disc_event *ev = data;

	if (size < sizeof(*ev))
		return 0;
	handle(ld, ev->pid, ev->kind, ev->files, ev->nfiles > CW_DISC_MAX_FILES ? CW_DISC_MAX_FILES : ev->nfiles,
	       ev->held, ev->ts_ns);
	return 0;
}

/* Stops whose report was lost: handled from what /proc says. */
static void sweep(struct cw_live_discover *ld, uint64_t now)
{
	int fd = bpf_map__fd(ld->skel->maps.disc_held);
	__u32 keys[HELD_MAX];
	struct cw_disc_hold h;
	int n = held_pids(fd, keys), i;

	for (i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, &keys[i], &h) || now < h.ts_ns || now - h.ts_ns < SWEEP_AGE_NS)
			continue;
		handle(ld, keys[i], CW_DISC_LOAD, NULL, 0, 1, h.ts_ns);
		pthread_mutex_lock(&ld->lock);
		ld->swept++;
		pthread_mutex_unlock(&ld->lock);
	}
}

static void *thread_main(void *arg)
{
	struct cw_live_discover *ld = arg;
	uint64_t last = cw_monotonic_ns();

	while (!ld->stop) {
		uint64_t now;

		ring_buffer__poll(ld->rb, 20);
		now = cw_monotonic_ns();
		if (now - last >= SWEEP_EVERY_NS) {
			last = now;
			sweep(ld, now);
		}
	}
	return NULL;
}

/* The watchdog: a child that shares only the held map and a pipe with the
 * agent. It waits for end-of-file on the pipe (the agent closed it, or
 * died: SIGKILL included) and resumes every process still in the map. It
 * leaves the session (setsid) and ignores the terminal's signals, so the
 * Ctrl-C or group kill that ends the agent does not end it too. */
static int watchdog_start(struct cw_live_discover *ld)
{
	int p[2], held = bpf_map__fd(ld->skel->maps.disc_held);
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int rfd = fcntl(p[0], F_DUPFD, 100), mfd = fcntl(held, F_DUPFD, 100);
		char c;

		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		setsid();
		prctl(PR_SET_NAME, "causeway-resume");
		if (rfd < 0 || mfd < 0 || dup2(rfd, 3) < 0 || dup2(mfd, 4) < 0)
			_exit(1);
		/* Nothing else of the agent's: its probe links must die with
		 * it, not live on in here. */
		close_range(5, ~0u, 0);
		for (;;) {
			ssize_t n = read(3, &c, 1);

			if (n == 0 || (n < 0 && errno != EINTR))
				break;
		}
		resume_all(4);
		_exit(0);
	}
	close(p[0]);
	ld->watchdog = pid;
	ld->wd_fd = p[1];
	return 0;
}

int cw_live_start(struct cw_live_discover *ld, char *err, size_t errlen)
{
	int i, rc;

	/* The watchdog first: from the first stop on, someone resumes. */
	rc = watchdog_start(ld);
	if (rc) {
		snprintf(err, errlen, "cannot start the discovery watchdog: %s", strerror(-rc));
		return rc;
	}
	for (i = 0; loader_globs[i]; i++) {
		glob_t g;
		size_t j;

		if (glob(loader_globs[i], 0, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc; j++)
			cw_live_hook_loader(ld, g.gl_pathv[j]);
		globfree(&g);
	}
	if (!ld->nloaders) {
		snprintf(err, errlen, "no dynamic loader with _dl_debug_state found");
		return -ENOENT;
	}
	ld->exec_link = bpf_program__attach(ld->walk ? ld->skel->progs.cw_exec_loader
						    : ld->skel->progs.cw_exec_loader_maps);
	if (!ld->exec_link) {
		rc = errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot attach the exec probe: %s", strerror(-rc));
		return rc;
	}
	ld->rb = ring_buffer__new(bpf_map__fd(ld->skel->maps.rb_discover), on_event, ld, NULL);
	if (!ld->rb) {
		rc = errno ? -errno : -ENOMEM;
		snprintf(err, errlen, "cannot read the discovery ring: %s", strerror(-rc));
		return rc;
	}
	rc = pthread_create(&ld->thread, NULL, thread_main, ld);
	if (rc) {
		snprintf(err, errlen, "cannot start the discovery thread: %s", strerror(rc));
		return -rc;
	}
	ld->running = 1;
	return 0;
}

int cw_live_is_held(struct cw_live_discover *ld, uint32_t pid)
{
	struct cw_disc_hold h;

	return ld && !bpf_map_lookup_elem(bpf_map__fd(ld->skel->maps.disc_held), &pid, &h);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void cw_live_get_stats(struct cw_live_discover *ld, struct cw_live_stats *s)
{
	uint64_t ks[CW_DS_MAX] = { 0 };
	int ncpu = libbpf_num_possible_cpus(), c;
	uint32_t *sorted = NULL;
	uint64_t *vals;
	size_t n;
	__u32 k;

	memset(s, 0, sizeof(*s));
	if (!ld)
		return;
	vals = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*vals)) : NULL;
	for (k = 0; vals && k < CW_DS_MAX; k++)
		if (!bpf_map_lookup_elem(bpf_map__fd(ld->skel->maps.disc_stats), &k, vals))
			for (c = 0; c < ncpu; c++)
				ks[k] += vals[c];
	free(vals);
	s->loads = ks[CW_DS_LOADS];
	s->execs = ks[CW_DS_EXECS];
	s->events = ks[CW_DS_EVENTS];
	s->held = ks[CW_DS_HELD];
	s->hold_full = ks[CW_DS_HOLD_FULL];
	s->ring_dropped = ks[CW_DS_RING_DROPPED];
	pthread_mutex_lock(&ld->lock);
	s->swept = ld->swept;
	s->attached = ld->attached;
	s->late = ld->late;
	s->loaders = (uint64_t)ld->nloaders;
	s->lat_max_us = ld->lat_max_us;
	s->lat_n = ld->nlat;
	n = ld->nlat < LAT_KEEP ? ld->nlat : LAT_KEEP;
	if (n && (sorted = malloc(n * sizeof(*sorted))))
		memcpy(sorted, ld->lat_us, n * sizeof(*sorted));
	pthread_mutex_unlock(&ld->lock);
	if (sorted) {
		qsort(sorted, n, sizeof(*sorted), cmp_u32);
		s->lat_p50_us = sorted[n / 2];
		free(sorted);
	}
}

void cw_live_close(struct cw_live_discover *ld, struct cw_live_stats *last)
{
	int i;

	if (!ld)
		return;
	/* No new stops once the programs are gone; then the thread ends and
	 * whoever is still stopped is resumed here (the watchdog would do it
	 * at the pipe's close anyway). */
	bpf_link__destroy(ld->exec_link);
	for (i = 0; i < ld->nloaders; i++)
		bpf_link__destroy(ld->loader_links[i]);
	if (ld->running) {
		ld->stop = 1;
		pthread_join(ld->thread, NULL);
	}
	if (ld->rb) {
		ring_buffer__consume(ld->rb);
		ring_buffer__free(ld->rb);
	}
	if (ld->skel)
		resume_all(bpf_map__fd(ld->skel->maps.disc_held));
	if (last && ld->skel)
		cw_live_get_stats(ld, last);
	if (ld->wd_fd >= 0)
		close(ld->wd_fd);
	if (ld->watchdog > 0)
		waitpid(ld->watchdog, NULL, 0);
	discover_bpf__destroy(ld->skel);
	pthread_mutex_destroy(&ld->lock);
	free(ld);
}

struct bpf_object *cw_live_object(struct cw_live_discover *ld)
{
	return ld && ld->skel ? ld->skel->obj : NULL;
}
