/* The output-file rule (out_path.h). Everything after resolution works on
 * the directory's descriptor and the final name, so what is renamed over
 * is the entry that was checked, not whatever a path reaches later. */
#define _GNU_SOURCE
#include "util/out_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "util/tmp_cleanup.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

static const char *const db_sides[] = { "", "-wal", "-shm", "-journal" };
#define NSIDES (int)(sizeof(db_sides) / sizeof(db_sides[0]))

static void out_init(struct cw_out *o, const struct cw_out_rule *r)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->dirfd = -1;
	o->slot = -1;
	o->flags = r ? r->flags : 0;
	o->inputs = r ? r->inputs : NULL;
	o->ninputs = r ? r->ninputs : 0;
}

static const char *kind_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR: return "a directory";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFLNK: return "a symbolic link";
	default: return "not a regular file";
	}
}

/* The output, as st describes it, against every input and the files
 * SQLite keeps beside it. */
static int check_inputs(const struct cw_out *o, const struct stat *st, const char *shown, char *err,
			size_t errlen)
{
	char side[PATH_MAX + 16];
	struct stat is;

	for (int i = 0; i < o->ninputs; i++)
		for (int k = 0; k < NSIDES; k++) {
			snprintf(side, sizeof(side), "%s%s", o->inputs[i], db_sides[k]);
			if (stat(side, &is) || is.st_dev != st->st_dev || is.st_ino != st->st_ino)
				continue;
			if (!k)
				snprintf(err, errlen, "refusing to write \"%s\": it is the input \"%s\"", shown,
					 o->inputs[i]);
			else
				snprintf(err, errlen, "refusing to write \"%s\": it is the %s file of the input \"%s\"",
					 shown, db_sides[k], o->inputs[i]);
			return -EINVAL;
		}
	return 0;
}

/* A name not there yet can still be an input's -wal, -shm or -journal,
 * which SQLite creates when it opens the input. */
static int check_new_name(const struct cw_out *o, const char *shown, char *err, size_t errlen)
{
	struct stat ds, is;

	if (fstat(o->dirfd, &ds))
		return 0;
	for (int i = 0; i < o->ninputs; i++) {
		char *real = realpath(o->inputs[i], NULL), *slash;
		size_t bl;

		if (!real)
			continue;
		slash = strrchr(real, '/');
		*slash = '\0';
		if (stat(*real ? real : "/", &is) || is.st_dev != ds.st_dev || is.st_ino != ds.st_ino) {
			free(real);
			continue;
		}
		bl = strlen(slash + 1);
		for (int k = 0; k < NSIDES; k++)
			if (!strncmp(o->name, slash + 1, bl) && !strcmp(o->name + bl, db_sides[k])) {
				snprintf(err, errlen, "refusing to write \"%s\": it is the %s file of the input \"%s\"",
					 shown, k ? db_sides[k] : "database", o->inputs[i]);
				free(real);
				return -EINVAL;
			}
		free(real);
	}
	return 0;
}

static int set_dir(struct cw_out *o, const char *dir, const char *name, const char *shown, char *err,
		   size_t errlen)
{
	int rc;

	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		snprintf(err, errlen, "cannot write \"%s\": it names a directory", shown);
		return -EISDIR;
	}
	if (strlen(name) > NAME_MAX) {
		snprintf(err, errlen, "cannot write \"%s\": %s", shown, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	snprintf(o->name, sizeof(o->name), "%s", name);
	if (o->dirfd < 0 && (o->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot write \"%s\": %s", shown, strerror(-rc));
		return rc;
	}
	/* "x.db" stays "x.db" in messages, not "./x.db". */
	if (asprintf(&o->dir, "%s", dir) < 0 ||
	    (!strcmp(dir, ".") ? asprintf(&o->path, "%s", name)
			       : asprintf(&o->path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name)) < 0) {
		o->path = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* cur split at its last '/' into the directory and the final name. */
static int set_target(struct cw_out *o, const char *cur, const char *shown, char *err, size_t errlen)
{
	const char *slash = strrchr(cur, '/');
	char dir[PATH_MAX];

	if (!slash)
		return set_dir(o, ".", cur, shown, err, errlen);
	snprintf(dir, sizeof(dir), "%.*s", slash == cur ? 1 : (int)(slash - cur), cur);
	return set_dir(o, dir, slash + 1, shown, err, errlen);
}

static int in_procfs(const char *cur)
{
	const char *slash = strrchr(cur, '/');
	char dir[PATH_MAX];
	struct statfs fs;

	snprintf(dir, sizeof(dir), "%.*s", !slash ? 1 : slash == cur ? 1 : (int)(slash - cur), slash ? cur : ".");
	return !statfs(dir, &fs) && fs.f_type == PROC_SUPER_MAGIC;
}

/* A device, FIFO or /proc/PID/fd/N: opened for writing as it is, never
 * created and never truncated (a regular file reached through /proc is
 * appended to, as the shell's redirection left it). */
static int in_place(struct cw_out *o, const char *cur, const char *shown, char *err, size_t errlen)
{
	struct stat st;
	int rc, fl = O_WRONLY | O_NOCTTY | O_CLOEXEC;

	if (stat(cur, &st)) {
		rc = -errno;
		snprintf(err, errlen, "cannot write \"%s\": %s", shown, strerror(-rc));
		return rc;
	}
	if (!(o->flags & CW_OUT_STREAM)) {
		snprintf(err, errlen, "refusing to write \"%s\": it is %s; give the path of a regular file", shown,
			 S_ISREG(st.st_mode) ? "a link in /proc" : kind_name(st.st_mode));
		return -EINVAL;
	}
	if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "refusing to write \"%s\": it is %s", shown, kind_name(st.st_mode));
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if ((rc = check_inputs(o, &st, shown, err, errlen)))
		return rc;
	if (S_ISREG(st.st_mode))
		fl |= O_APPEND;
	if ((o->fd = open(cur, fl)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot write \"%s\": %s", shown, strerror(-rc));
		return rc;
	}
	if (!(o->path = strdup(shown)))
		return -ENOMEM;
	return 0;
}

int cw_out_resolve(struct cw_out *o, const char *path, const struct cw_out_rule *r, char *err, size_t errlen)
{
	char cur[PATH_MAX], link[PATH_MAX], next[PATH_MAX];
	struct stat st;
	int rc;

	out_init(o, r);
	if (!path || !*path) {
		snprintf(err, errlen, "no output path");
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(cur)) {
		snprintf(err, errlen, "cannot write \"%.64s...\": %s", path, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	snprintf(cur, sizeof(cur), "%s", path);
	for (int hops = 0;; hops++) {
		ssize_t n;

		if (lstat(cur, &st)) {
			if (errno != ENOENT) {
				rc = -errno;
				snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(-rc));
				return rc;
			}
			if ((rc = set_target(o, cur, path, err, errlen)))
				return rc;
			return check_new_name(o, path, err, errlen);
		}
		if (!S_ISLNK(st.st_mode))
			break;
		/* /proc/PID/fd/N and /dev/stdout: the open file it stands for. */
		if (in_procfs(cur))
			return in_place(o, cur, path, err, errlen);
		if (hops >= 40) {
			snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(ELOOP));
			return -ELOOP;
		}
		/* What fs.protected_symlinks does in sticky directories, here
		 * everywhere: a link another user planted is not followed. */
		if (st.st_uid != geteuid() && st.st_uid != 0) {
			snprintf(err, errlen,
				 "refusing to write \"%s\": \"%s\" is a symbolic link owned by uid %u (links are "
				 "followed only when owned by you or root)",
				 path, cur, (unsigned)st.st_uid);
			return -EPERM;
		}
		if ((n = readlink(cur, link, sizeof(link) - 1)) < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(-rc));
			return rc;
		}
		link[n] = '\0';
		if (link[0] == '/' || !strchr(cur, '/'))
			rc = snprintf(next, sizeof(next), "%s", link);
		else
			rc = snprintf(next, sizeof(next), "%.*s/%s", (int)(strrchr(cur, '/') - cur), cur, link);
		if (rc < 0 || (size_t)rc >= sizeof(next)) {
			snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(ENAMETOOLONG));
			return -ENAMETOOLONG;
		}
		memcpy(cur, next, (size_t)rc + 1);
	}
	if (!S_ISREG(st.st_mode)) {
		if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
			return in_place(o, cur, path, err, errlen);
		snprintf(err, errlen, "refusing to write \"%s\": it is %s", path, kind_name(st.st_mode));
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if ((rc = check_inputs(o, &st, path, err, errlen)))
		return rc;
	if (!(o->flags & CW_OUT_REPLACE)) {
		snprintf(err, errlen, "\"%s\" exists", path);
		return -EEXIST;
	}
	return set_target(o, cur, path, err, errlen);
}

/* mkdir -p, 0700 for what it creates. */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (char *s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, 0700) && errno != EEXIST)
			return -errno;
		if (!c)
			return 0;
		*s = c;
	}
}

int cw_out_resolve_beneath(struct cw_out *o, const char *dir, const char *path, const struct cw_out_rule *r,
			   char *err, size_t errlen)
{
	char rel[PATH_MAX], shown_dir[PATH_MAX], base[PATH_MAX], *save = NULL, *comp, *nextc;
	size_t dl;
	struct stat st;
	int rc, fd;

	out_init(o, r);
	o->flags &= ~CW_OUT_STREAM;
	if (!dir || !*dir || !path || !*path || strlen(path) >= sizeof(rel) || strlen(dir) >= sizeof(shown_dir)) {
		snprintf(err, errlen, "no usable output path");
		return -EINVAL;
	}
	snprintf(shown_dir, sizeof(shown_dir), "%s", dir);
	for (dl = strlen(shown_dir); dl > 1 && shown_dir[dl - 1] == '/'; dl--)
		shown_dir[dl - 1] = '\0';
	if (path[0] == '/') {
		char *real = realpath(shown_dir, NULL);
		size_t rl = real ? strlen(real) : 0;

		if (!strncmp(path, shown_dir, dl) && path[dl] == '/')
			snprintf(rel, sizeof(rel), "%s", path + dl + 1);
		else if (real && !strncmp(path, real, rl) && path[rl] == '/')
			snprintf(rel, sizeof(rel), "%s", path + rl + 1);
		else
			rel[0] = '\0';
		free(real);
		if (!rel[0]) {
			snprintf(err, errlen, "\"%s\" is outside the export directory \"%s\" (mcp.export_dir); give a "
				 "name inside it", path, shown_dir);
			return -EACCES;
		}
	} else {
		snprintf(rel, sizeof(rel), "%s", path);
	}
	snprintf(base, sizeof(base), "%s", shown_dir);
	if ((rc = make_dirs(shown_dir))) {
		snprintf(err, errlen, "cannot create the export directory \"%s\": %s", shown_dir, strerror(-rc));
		return rc;
	}
	if ((o->dirfd = open(shown_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the export directory \"%s\": %s", shown_dir, strerror(-rc));
		return rc;
	}
	/* One component at a time, none of them a link: the walk cannot
	 * leave the directory (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, on any
	 * kernel). */
	comp = strtok_r(rel, "/", &save);
	while (comp && (nextc = strtok_r(NULL, "/", &save))) {
		if (!strcmp(comp, "..")) {
			snprintf(err, errlen, "\"%s\" uses \"..\"; give a name inside the export directory \"%s\"",
				 path, base);
			return -EACCES;
		}
		if (strcmp(comp, ".")) {
			size_t l = strlen(shown_dir);

			fd = openat(o->dirfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				rc = -errno;
				snprintf(err, errlen, "cannot write \"%s\": \"%s\" is %s", path, comp,
					 rc == -ENOENT ? "missing" : rc == -ELOOP || rc == -ENOTDIR ?
					 "a symbolic link or not a directory" : strerror(-rc));
				return rc == -ELOOP || rc == -ENOTDIR ? -EACCES : rc;
			}
			close(o->dirfd);
			o->dirfd = fd;
			snprintf(shown_dir + l, sizeof(shown_dir) - l, "/%s", comp);
		}
		comp = nextc;
	}
	if (!comp || !strcmp(comp, ".") || !strcmp(comp, "..")) {
		snprintf(err, errlen, "\"%s\" names no file inside the export directory \"%s\"", path, base);
		return -EACCES;
	}
	if ((rc = set_dir(o, shown_dir, comp, path, err, errlen)))
		return rc;
	if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno != ENOENT) {
			rc = -errno;
			snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(-rc));
			return rc;
		}
		return check_new_name(o, path, err, errlen);
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "refusing to write \"%s\": it is %s", path, kind_name(st.st_mode));
		return S_ISLNK(st.st_mode) ? -EACCES : S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if ((rc = check_inputs(o, &st, path, err, errlen)))
		return rc;
	if (!(o->flags & CW_OUT_REPLACE)) {
		snprintf(err, errlen, "\"%s\" exists; pass \"overwrite\": true to replace it", path);
		return -EEXIST;
	}
	return 0;
}

int cw_out_tmp(struct cw_out *o, char *err, size_t errlen)
{
	static const char az[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	int fd = -1, rc = -EEXIST;

	if (o->dirfd < 0 || o->fd >= 0 || o->tmp[0])
		return -EINVAL;
	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		unsigned char rnd[6];
		char sfx[7];

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			for (size_t i = 0; i < sizeof(rnd); i++)
				rnd[i] = (unsigned char)(rand() ^ getpid() ^ tries);
		for (size_t i = 0; i < sizeof(rnd); i++)
			sfx[i] = az[rnd[i] % (sizeof(az) - 1)];
		sfx[6] = '\0';
		/* NAME.tmp-XXXXXX, the name cut so the whole fits NAME_MAX. */
		snprintf(o->tmp, sizeof(o->tmp), "%.*s.tmp-%s", NAME_MAX - 20, o->name, sfx);
		fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a file in \"%s\": %s", o->dir, strerror(-rc));
		o->tmp[0] = '\0';
		return rc;
	}
	{
		char names[CW_TMP_NAMES][NAME_MAX + 16];
		const char *np[CW_TMP_NAMES];
		int n = o->flags & CW_OUT_DB ? NSIDES : 1;

		for (int k = 0; k < n; k++) {
			snprintf(names[k], sizeof(names[k]), "%s%s", o->tmp, db_sides[k]);
			np[k] = names[k];
		}
		o->slot = cw_tmp_register(o->dirfd, np, n);
	}
	if (asprintf(&o->tmp_path, "%s%s%s", o->dir, o->dir[strlen(o->dir) - 1] == '/' ? "" : "/", o->tmp) < 0)
		o->tmp_path = NULL;
	return fd;
}

static void remove_sides(int dirfd, const char *name, int from)
{
	char side[NAME_MAX + 16];

	for (int k = from; k < NSIDES; k++) {
		snprintf(side, sizeof(side), "%s%s", name, db_sides[k]);
		unlinkat(dirfd, side, 0);
	}
}

int cw_out_commit(struct cw_out *o, char *err, size_t errlen)
{
	struct stat st;
	int rc, exists;

	if (o->fd >= 0)
		return 0;
	if (!o->tmp[0])
		return -EINVAL;
	exists = !fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW);
	if (exists && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "refusing to replace \"%s\": it is now %s", o->path, kind_name(st.st_mode));
		return -EINVAL;
	}
	if (exists && (rc = check_inputs(o, &st, o->path, err, errlen)))
		return rc;
	if (exists && !(o->flags & CW_OUT_REPLACE)) {
		snprintf(err, errlen, "\"%s\" exists", o->path);
		return -EEXIST;
	}
	/* A stale WAL beside the name (of the file being replaced, or left
	 * without one) would be replayed onto the new database. */
	for (int k = 1; (o->flags & CW_OUT_DB) && k < 3; k++) {
		char side[NAME_MAX + 16];
		struct stat ss;

		snprintf(side, sizeof(side), "%s%s", o->name, db_sides[k]);
		if (fstatat(o->dirfd, side, &ss, AT_SYMLINK_NOFOLLOW))
			continue;
		if (check_inputs(o, &ss, side, err, errlen))
			return -EINVAL;
		/* A link goes (never what it names); a device or FIFO stays. */
		if (S_ISREG(ss.st_mode) || S_ISLNK(ss.st_mode))
			unlinkat(o->dirfd, side, 0);
	}
	if (o->flags & CW_OUT_REPLACE)
		rc = renameat(o->dirfd, o->tmp, o->dirfd, o->name);
	else if ((rc = renameat2(o->dirfd, o->tmp, o->dirfd, o->name, RENAME_NOREPLACE)) && errno == EINVAL) {
		/* A file system without RENAME_NOREPLACE: link fails on an
		 * existing name just the same. */
		if (!(rc = linkat(o->dirfd, o->tmp, o->dirfd, o->name, 0)))
			unlinkat(o->dirfd, o->tmp, 0);
	}
	if (rc) {
		rc = -errno;
		snprintf(err, errlen, rc == -EEXIST ? "\"%s\" exists" : "cannot rename to \"%s\": %s", o->path,
			 strerror(-rc));
		return rc;
	}
	if (o->flags & CW_OUT_DB) {
		/* A WAL the writer left belongs to the file it now sits beside. */
		char from[NAME_MAX + 16], to[NAME_MAX + 16];

		snprintf(from, sizeof(from), "%s-wal", o->tmp);
		snprintf(to, sizeof(to), "%s-wal", o->name);
		if (renameat(o->dirfd, from, o->dirfd, to) && errno != ENOENT) {
			rc = -errno;
			snprintf(err, errlen, "cannot move \"%s\": %s", from, strerror(-rc));
		}
		remove_sides(o->dirfd, o->tmp, 2);
	}
	o->tmp[0] = '\0';
	cw_tmp_unregister(o->slot);
	o->slot = -1;
	free(o->tmp_path);
	o->tmp_path = NULL;
	return rc;
}

void cw_out_release(struct cw_out *o)
{
	if (o->tmp[0] && o->dirfd >= 0 && (o->flags & CW_OUT_DB))
		remove_sides(o->dirfd, o->tmp, 0);
	else if (o->tmp[0] && o->dirfd >= 0)
		unlinkat(o->dirfd, o->tmp, 0);
	cw_tmp_unregister(o->slot);
	if (o->fd >= 0)
		close(o->fd);
	if (o->dirfd >= 0)
		close(o->dirfd);
	free(o->dir);
	free(o->path);
	free(o->tmp_path);
	out_init(o, NULL);
}
