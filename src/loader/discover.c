/* discover: hooked CUDA libraries mapped by processes, from /proc/PID/maps. */
#include "loader/discover.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/fileset.h"
#include "util/root_open.h"

const char *cw_lib_kind_name(enum cw_lib_kind k)
{
	static const char *const names[CW_LIB_NKINDS] = { "cudart", "cuda", "nccl" };

	return (unsigned)k < CW_LIB_NKINDS ? names[k] : "?";
}

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

int cw_lib_kind_of(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (!strstr(b, ".so"))
		return -1;
	/* auditwheel renames bundled copies (libcudart-9335f6a2.so.12), so the
	 * prefix is matched up to the separator. libcudadevrt and
	 * libcudart_static are archives, never mapped. */
	if (starts(b, "libcudart.so") || starts(b, "libcudart-"))
		return CW_LIB_CUDART;
	if (starts(b, "libcuda.so") || starts(b, "libcuda-"))
		return CW_LIB_CUDA;
	if (starts(b, "libnccl.so") || starts(b, "libnccl-"))
		return CW_LIB_NCCL;
	return -1;
}

int cw_lib_version(const char *path, char *buf, size_t len)
{
	char real[PATH_MAX];
	const char *b, *v;

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	b = strrchr(real, '/');
	b = b ? b + 1 : real;
	v = strstr(b, ".so.");
	if (!v || !isdigit((unsigned char)v[4]))
		return -ENOENT;
	snprintf(buf, len, "%s", v + 4);
	return 0;
}

int cw_pid_exists(uint32_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%u", pid);
	return access(p, F_OK) == 0;
}

/* Whether mapped, resolved inside pid's root, is a regular file with this
 * device and inode. */
static int in_root_is(uint32_t pid, const char *mapped, uint64_t dev, uint64_t ino)
{
	struct stat st;
	int fd = cw_proc_root_open((pid_t)pid, mapped, CW_ROOT_ELF_MAX), ok;

	if (fd < 0)
		return 0;
	ok = !fstat(fd, &st) && (uint64_t)st.st_ino == ino && (uint64_t)st.st_dev == dev;
	close(fd);
	return ok;
}

/* A path the tracer can open for a file the process maps: its mount
 * namespace's view through /proc/PID/root first (containers), then the
 * map_files link (works for deleted or overmounted files). The inode must
 * match what the maps line says, or the copy would be the wrong one. */
static int resolve_path(uint32_t pid, const char *range, const char *mapped, uint64_t dev, uint64_t ino,
			char *out, size_t outlen)
{
	struct stat st;

	/* A path that does not fit is not opened truncated. The uprobe API
	 * takes a path, which the kernel resolves following links: it is kept
	 * only when the same path resolved inside the process's root
	 * (util/root_open.h: no link out of it, a regular file) is the mapped
	 * file too, so a process cannot point it at a file of the host. */
	if ((size_t)snprintf(out, outlen, "/proc/%u/root%s", pid, mapped) < outlen && !stat(out, &st) && (uint64_t)st.st_ino == ino && (uint64_t)st.st_dev == dev && in_root_is(pid, mapped, dev, ino)) {
		/* Outside a container the plain path is the same file and reads
		 * better in reports; keep /proc/PID/root only when needed. */
		struct stat st2;

		if (!stat(mapped, &st2) && st2.st_ino == st.st_ino && st2.st_dev == st.st_dev)
			snprintf(out, outlen, "%s", mapped);
		return 0;
	}
	if ((size_t)snprintf(out, outlen, "/proc/%u/map_files/%s", pid, range) < outlen && !stat(out, &st) && (uint64_t)st.st_ino == ino)
		return 0;
	return -ENOENT;
}

uint64_t cw_kdev(uint64_t dev)
{
	return ((uint64_t)major(dev) << 20) | minor(dev);
}

int cw_discover_find_file(uint32_t pid, uint64_t kdev, uint64_t ino, char *out, size_t outlen)
{
	char p[64], line[PATH_MAX + 256];
	int rc = -ENOENT;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%u/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	while (rc && fgets(line, sizeof(line), f)) {
		char range[64], perms[8], devs[16], path[PATH_MAX];
		unsigned long long off, i;
		unsigned maj, min;

		path[0] = '\0';
		if (sscanf(line, "%63s %7s %llx %15s %llu %4095[^\n]", range, perms, &off, devs, &i, path) < 6 ||
		    path[0] != '/' || i != ino || sscanf(devs, "%x:%x", &maj, &min) != 2 ||
		    cw_kdev(makedev(maj, min)) != kdev)
			continue;
		/* A deleted file is still reachable through map_files. */
		if (strstr(path, " (deleted)"))
			*strstr(path, " (deleted)") = '\0';
		rc = resolve_path(pid, range, path, makedev(maj, min), ino, out, outlen);
	}
	fclose(f);
	return rc;
}

int cw_discover_pid(uint32_t pid, cw_discover_fn fn, void *ctx)
{
	/* A maps file lists a library once per segment (4-5 lines). */
	struct cw_fileset seen = { .n = 0 };
	int n = 0, rc = 0;
	char p[64], line[PATH_MAX + 256];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%u/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	while (fgets(line, sizeof(line), f)) {
		char range[64], perms[8], devs[16], path[PATH_MAX];
		unsigned long long off, ino;
		unsigned maj, min;
		struct cw_lib_copy lib;
		int kind;

		path[0] = '\0';
		if (sscanf(line, "%63s %7s %llx %15s %llu %4095[^\n]", range, perms, &off, devs, &ino, path) < 6)
			continue;
		if (path[0] != '/' || strstr(path, " (deleted)"))
			continue;
		kind = cw_lib_kind_of(path);
		if (kind < 0 || sscanf(devs, "%x:%x", &maj, &min) != 2)
			continue;
		if (cw_fileset_has(&seen, (uint64_t)makedev(maj, min), ino))
			continue;
		memset(&lib, 0, sizeof(lib));
		lib.kind = (enum cw_lib_kind)kind;
		lib.dev = makedev(maj, min);
		lib.ino = ino;
		lib.pid = pid;
		snprintf(lib.mapped, sizeof(lib.mapped), "%s", path);
		if (resolve_path(pid, range, path, lib.dev, lib.ino, lib.path, sizeof(lib.path)))
			continue;
		cw_fileset_add(&seen, lib.dev, lib.ino);
		n++;
		if (fn && (rc = fn(ctx, &lib)) != 0)
			break;
	}
	fclose(f);
	return rc ? rc : n;
}

int cw_discover_all(cw_discover_fn fn, void *ctx)
{
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int procs = 0, rc;

	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(d->d_name, &end, 10);

		if (*end || !pid || pid == (unsigned long)getpid())
			continue;
		rc = cw_discover_pid((uint32_t)pid, fn, ctx);
		if (rc > 0)
			procs++;
	}
	closedir(dir);
	return procs;
}
