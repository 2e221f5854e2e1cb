/* Files opened inside a process's root (root_open.h). */
#define _GNU_SOURCE
#include "util/root_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif
#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

/* Deeper directories than this are not walked by hand (the paths opened
 * here are library and debug-file paths, a dozen components). */
#define WALK_DEPTH 64

/* fd was opened O_PATH: only a regular file within max is reopened, read
 * only and non-blocking, through our own descriptor (no open of a FIFO,
 * socket or device ever happens, and nothing is resolved again). The
 * reopened file must be the one checked. Closes fd. */
static int reopen_regular(int fd, uint64_t max)
{
	struct stat st, st2;
	char self[64];
	int rfd, err;

	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	rfd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	err = rfd < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if (fstat(rfd, &st2) || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		close(rfd);
		return -ESTALE;
	}
	return rfd;
}

int cw_open_regular(const char *path, uint64_t max_size)
{
	int fd = open(path, O_PATH | O_CLOEXEC);

	return fd < 0 ? -errno : reopen_regular(fd, max_size);
}

int cw_build_id_debug_path(const char *id, char *out, size_t len)
{
	size_t n = strlen(id), i;
	int r;

	if (n < 4 || n > 80 || n % 2)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return -EINVAL;
	r = snprintf(out, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

int cw_pathwalk_init(struct cw_pathwalk *w, const char *path)
{
	size_t n = strlen(path);

	if (n >= sizeof(w->buf))
		return -ENAMETOOLONG;
	memcpy(w->buf, path, n + 1);
	w->pos = 0;
	w->len = n;
	w->links = 0;
	return 0;
}

/* The next component's start and length from pos ("" at the end). */
static size_t span(const struct cw_pathwalk *w, size_t *pos)
{
	size_t p = *pos, e;

	for (;;) {
		while (p < w->len && w->buf[p] == '/')
			p++;
		e = p;
		while (e < w->len && w->buf[e] != '/')
			e++;
		if (e - p == 1 && w->buf[p] == '.') {
			p = e;
			continue;
		}
		*pos = p;
		return e - p;
	}
}

int cw_pathwalk_next(struct cw_pathwalk *w, char *name, size_t len)
{
	size_t p = w->pos, n = span(w, &p);

	if (!n) {
		w->pos = w->len;
		return CW_WALK_END;
	}
	w->pos = p + n;
	if (n == 2 && w->buf[p] == '.' && w->buf[p + 1] == '.')
		return CW_WALK_UP;
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(name, w->buf + p, n);
	name[n] = '\0';
	return CW_WALK_NAME;
}

int cw_pathwalk_more(const struct cw_pathwalk *w)
{
	size_t p = w->pos;

	return span(w, &p) != 0;
}

int cw_pathwalk_link(struct cw_pathwalk *w, const char *target)
{
	size_t tl = strlen(target), rest = w->len - w->pos;

	if (++w->links > CW_WALK_MAX_LINKS || !tl)
		return -ELOOP;
	if (tl + 1 + rest >= sizeof(w->buf))
		return -ENAMETOOLONG;
	memmove(w->buf + tl + 1, w->buf + w->pos, rest);
	memcpy(w->buf, target, tl);
	w->buf[tl] = '/';
	w->len = tl + 1 + rest;
	w->buf[w->len] = '\0';
	w->pos = 0;
	return target[0] == '/';
}

int cw_root_openat_walk(int rootfd, const char *path, uint64_t max_size)
{
	struct cw_pathwalk w;
	int dirs[WALK_DEPTH], depth = 0, fd = -1, rc, i;
	char name[256], link[CW_WALK_PATH_MAX];

	if ((rc = cw_pathwalk_init(&w, path)))
		return rc;
	for (;;) {
		int cur = depth ? dirs[depth - 1] : rootfd;
		struct stat st;
		ssize_t ln;

		rc = cw_pathwalk_next(&w, name, sizeof(name));
		if (rc < 0)
			break;
		if (rc == CW_WALK_END) { /* the root itself, or a path ending in ".." */
			rc = -EISDIR;
			break;
		}
		if (rc == CW_WALK_UP) { /* never above the root */
			if (depth)
				close(dirs[--depth]);
			continue;
		}
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			rc = -errno;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			struct statfs sf;

			/* a link's text is resolved here, inside the root; the
			 * kernel never follows it. No link of procfs is followed
			 * at all: its magic links (/proc/PID/root, /fd/N, /exe)
			 * have no text that names their file (openat2's
			 * RESOLVE_NO_MAGICLINKS refuses them too) */
			if (fstatfs(fd, &sf) || sf.f_type == PROC_SUPER_MAGIC) {
				rc = -ELOOP;
				break;
			}
			ln = readlinkat(fd, "", link, sizeof(link) - 1);
			close(fd);
			fd = -1;
			if (ln < 0) {
				rc = -errno;
				break;
			}
			link[ln] = '\0';
			rc = cw_pathwalk_link(&w, link);
			if (rc < 0)
				break;
			if (rc == 1)
				while (depth)
					close(dirs[--depth]);
			continue;
		}
		if (!cw_pathwalk_more(&w)) {
			rc = reopen_regular(fd, max_size);
			fd = -1;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = -ENOTDIR;
			break;
		}
		if (depth == WALK_DEPTH) {
			rc = -ENAMETOOLONG;
			break;
		}
		dirs[depth++] = fd;
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	for (i = 0; i < depth; i++)
		close(dirs[i]);
	return rc;
}

int cw_root_openat(int rootfd, const char *path, uint64_t max_size)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd, tries;

	/* -EAGAIN: a rename raced the ".." check; the walk is retried */
	for (tries = 0; tries < 4; tries++) {
		fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0)
			return reopen_regular(fd, max_size);
		if (errno != EAGAIN)
			break;
	}
	if (errno == ENOSYS)
		return cw_root_openat_walk(rootfd, path, max_size);
	return -errno;
}

int cw_proc_root_open(pid_t pid, const char *path, uint64_t max_size)
{
	char root[64];
	int rootfd, fd;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	fd = cw_root_openat(rootfd, path, max_size);
	close(rootfd);
	return fd;
}
