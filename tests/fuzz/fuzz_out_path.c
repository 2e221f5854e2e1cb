/* Fuzzes the output-file rule (util/out_path.h). The bytes build a small
 * tree inside a private temporary directory (regular files, directories,
 * FIFOs, sockets, character devices when mknod is allowed, symbolic and
 * hard links, the input's -wal), then name an output path and the rule's
 * flags; the rule resolves it, plainly or confined (the MCP form), and a
 * resolved file is written and committed. Invariants: the input (and every
 * link to it) keeps its bytes and inode; nothing that was not a regular
 * file is replaced (every entry keeps its kind); a confined output lies
 * inside its directory; no temporary file survives.
 * Names come from a small alphabet and hold at most two "..", so nothing
 * outside the private directory is ever reached. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/out_path.h"

static char root[64], work[128], input[160];
static const char *const alpha[] = { "a", "b", "in.db", "in.db-wal", "sub", "..", ".", "c.json" };
#define NALPHA (sizeof(alpha) / sizeof(alpha[0]))
#define MAX_ENTRIES 8

struct cursor {
	const uint8_t *p;
	size_t n;
};

static unsigned next(struct cursor *c)
{
	if (!c->n)
		return 0;
	c->n--;
	return *c->p++;
}

/* A relative name of 1-3 components, at most two of them "..". */
static void name_from(struct cursor *c, char *buf, size_t len, int allow_up)
{
	int parts = 1 + (int)(next(c) % 3), ups = 0;

	buf[0] = '\0';
	for (int i = 0; i < parts; i++) {
		const char *w = alpha[next(c) % NALPHA];
		size_t l = strlen(buf);

		if (!strcmp(w, "..") && (!allow_up || ++ups > 2))
			w = "a";
		snprintf(buf + l, len - l, "%s%s", i ? "/" : "", w);
	}
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void rm_tree(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		abort();
}

static void cleanup(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct snap {
	char path[300];
	mode_t kind;
	ino_t ino;
};

static int snapshot(const char *dir, struct snap *s, int n, int max)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)) && n < max) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(s[n].path, sizeof(s[n].path), "%s/%s", dir, e->d_name);
		if (lstat(s[n].path, &st))
			continue;
		s[n].kind = st.st_mode & S_IFMT;
		s[n].ino = st.st_ino;
		n++;
		if (S_ISDIR(st.st_mode))
			n = snapshot(s[n - 1].path, s, n, max);
	}
	if (d)
		closedir(d);
	return n;
}

static int tmp_left(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char p[300];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n += strstr(e->d_name, ".tmp-") != NULL;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (!lstat(p, &st) && S_ISDIR(st.st_mode))
			n += tmp_left(p);
	}
	if (d)
		closedir(d);
	return n;
}

static void check_input(ino_t ino)
{
	char buf[16] = { 0 };
	struct stat st;
	int fd = open(input, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) != 5 || strcmp(buf, "INPUT") || fstat(fd, &st) ||
	    st.st_ino != ino)
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cursor c = { data, size };
	struct snap before[64], after[64];
	int nb, na, readers[MAX_ENTRIES], nr = 0, rc, fd;
	char path[300], name[200], err[512];
	const char *inputs[1] = { input };
	struct cw_out_rule rule = { inputs, 1, 0 };
	struct cw_out o;
	struct stat st;
	int confined;

	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/cw-fuzz-out-XXXXXX");
		if (!mkdtemp(root))
			abort();
		atexit(cleanup);
	}
	snprintf(work, sizeof(work), "%s/w/x", root);
	rm_tree(root);
	if (mkdir(root, 0700) || mkdir((snprintf(path, sizeof(path), "%s/w", root), path), 0700) ||
	    mkdir(work, 0700))
		abort();
	snprintf(input, sizeof(input), "%s/in.db", work);
	fd = open(input, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, "INPUT", 5) != 5)
		abort();
	close(fd);
	if (stat(input, &st))
		abort();
	{
		ino_t ino = st.st_ino;
		int n = (int)(next(&c) % (MAX_ENTRIES + 1));

		for (int i = 0; i < n; i++) {
			unsigned kind = next(&c) % 8;
			char target[200];

			name_from(&c, name, sizeof(name), 0);
			snprintf(path, sizeof(path), "%s/%s", work, name);
			switch (kind) {
			case 0: fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644); if (fd >= 0) close(fd); break;
			case 1: mkdir(path, 0755); break;
			case 2: mkfifo(path, 0644); break;
			case 3:
				name_from(&c, target, sizeof(target), 1);
				if (symlink(target, path))
					break;
				break;
			case 4: link(input, path); break;
			case 5:
				if (mknod(path, S_IFCHR | 0666, makedev(1, 3)))
					mkfifo(path, 0644);
				break;
			case 6: {
				struct sockaddr_un sa = { .sun_family = AF_UNIX };
				int s = socket(AF_UNIX, SOCK_STREAM, 0);

				if (s >= 0 && strlen(path) < sizeof(sa.sun_path)) {
					memcpy(sa.sun_path, path, strlen(path) + 1);
					bind(s, (struct sockaddr *)&sa, sizeof(sa));
				}
				if (s >= 0)
					close(s);
				break;
			}
			default: { /* an absolute link to a name in the tree */
				name_from(&c, target, sizeof(target), 0);
				char abs[300];

				snprintf(abs, sizeof(abs), "%s/%s", work, target);
				if (symlink(abs, path))
					break;
			}
			}
		}
		nb = snapshot(root, before, 0, 64);
		/* A reader on every FIFO, so opening one to write never waits. */
		for (int i = 0; i < nb && nr < MAX_ENTRIES; i++)
			if (before[i].kind == S_IFIFO && (readers[nr] = open(before[i].path, O_RDONLY | O_NONBLOCK)) >= 0)
				nr++;
		rule.flags = next(&c) & (CW_OUT_REPLACE | CW_OUT_STREAM | CW_OUT_DB);
		confined = next(&c) & 1;
		name_from(&c, name, sizeof(name), 1);
		if (next(&c) & 1)
			snprintf(path, sizeof(path), "%s/%s", work, name);
		else
			snprintf(path, sizeof(path), "%s", name);
		if (confined) {
			rc = cw_out_resolve_beneath(&o, work, path, &rule, err, sizeof(err));
		} else {
			if (path[0] != '/') { /* relative to the tree, not the fuzzer's cwd */
				snprintf(err, sizeof(err), "%s/%s", work, path);
				snprintf(path, sizeof(path), "%s", err);
			}
			rc = cw_out_resolve(&o, path, &rule, err, sizeof(err));
		}
		if (!rc && o.fd >= 0) {
			if (confined || fstat(o.fd, &st) || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
				abort(); /* in place: devices and FIFOs only */
			if (write(o.fd, "x", 1) < 0 && errno != EAGAIN && errno != EPIPE)
				(void)0;
		} else if (!rc) {
			if (!o.path || (!lstat(o.path, &st) && !S_ISREG(st.st_mode)))
				abort(); /* only a new name or a regular file is renamed over */
			if (confined) {
				char *real = realpath(o.dir, NULL), *rw = realpath(work, NULL);

				if (!real || !rw || strncmp(real, rw, strlen(rw)) ||
				    (real[strlen(rw)] && real[strlen(rw)] != '/'))
					abort();
				free(real);
				free(rw);
			}
			if ((fd = cw_out_tmp(&o, err, sizeof(err))) >= 0) {
				if (write(fd, "OUT", 3) != 3)
					abort();
				close(fd);
				cw_out_commit(&o, err, sizeof(err));
			}
		}
		cw_out_release(&o);
		for (int i = 0; i < nr; i++)
			close(readers[i]);
		check_input(ino);
		/* Every entry that was not a regular file is still what it was;
		 * only a link may be gone (a stale -wal link of a database). */
		na = snapshot(root, after, 0, 64);
		for (int i = 0; i < nb; i++) {
			int found = 0;

			if (before[i].kind == S_IFREG)
				continue;
			for (int j = 0; j < na; j++)
				if (!strcmp(before[i].path, after[j].path)) {
					found = 1;
					if (after[j].kind != before[i].kind || after[j].ino != before[i].ino)
						abort();
				}
			if (!found && before[i].kind != S_IFLNK)
				abort();
		}
		if (tmp_left(root))
			abort();
	}
	return 0;
}
