/* Tenants on the live host (resolve.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tenant/resolve.h"
#include "util/readfile.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* /proc/PID/cgroup has one short line per hierarchy; a path is at most
 * PATH_MAX. */
#define CGROUP_FILE_MAX (32u << 10)

static int is_cgroup2(const char *dir)
{
	struct statfs s;

	return !statfs(dir, &s) && (unsigned long)s.f_type == (unsigned long)CGROUP2_SUPER_MAGIC;
}

const char *cw_cgroup2_root(void)
{
	static const char *root;
	static int done;

	if (!done) {
		if (is_cgroup2("/sys/fs/cgroup"))
			root = "/sys/fs/cgroup";
		else if (is_cgroup2("/sys/fs/cgroup/unified"))
			root = "/sys/fs/cgroup/unified";
		done = 1;
	}
	return root;
}

int cw_cgroup_layout(void)
{
	if (is_cgroup2("/sys/fs/cgroup"))
		return CW_CGROUP_UNIFIED;
	return is_cgroup2("/sys/fs/cgroup/unified") ? CW_CGROUP_HYBRID : CW_CGROUP_LEGACY;
}

/* Reads at most cap bytes of path into a malloc'd NUL-terminated buffer. */
static int read_capped(const char *path, size_t cap, char **out, size_t *outlen)
{
	char *buf = malloc(cap + 1);
	size_t n = 0;
	ssize_t r;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(buf);
		return e == ENOENT || e == ESRCH ? -ENOENT : -e;
	}
	while (n < cap && (r = read(fd, buf + n, cap - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	*out = buf;
	if (outlen)
		*outlen = n;
	return 0;
}

/* Finds the line of /proc/PID/cgroup whose controller list satisfies
 * want (NULL: the v2 line "0::"). */
static int pid_cgroup_line(uint32_t pid, const char *controller, char *buf, size_t len)
{
	char fn[64], *data, *line, *save = NULL;
	int err;

	snprintf(fn, sizeof(fn), "/proc/%u/cgroup", pid);
	if ((err = read_capped(fn, CGROUP_FILE_MAX, &data, NULL)))
		return err;
	err = -ENOENT;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = 0; /* line: the hierarchy id; c1 + 1: its controllers */
		*c2 = 0;
		if (controller) {
			/* "cpu,cpuacct": a whole-word match in the list. */
			char *list = c1 + 1, *tok, *s2 = NULL;
			int hit = 0;
			for (tok = strtok_r(list, ",", &s2); tok && !hit; tok = strtok_r(NULL, ",", &s2))
				hit = !strcmp(tok, controller);
			if (!hit)
				continue;
		} else if (strcmp(line, "0") || c1[1] != 0) {
			continue;
		}
		if (strlen(c2 + 1) >= len || c2[1] != '/') {
			err = -EINVAL;
			break;
		}
		snprintf(buf, len, "%s", c2 + 1);
		err = 0;
		break;
	}
	free(data);
	return err;
}

int cw_pid_cgroup_path(uint32_t pid, char *buf, size_t len)
{
	return pid_cgroup_line(pid, NULL, buf, len);
}

int cw_pid_cgroup_v1_path(uint32_t pid, const char *controller, char *buf, size_t len)
{
	return pid_cgroup_line(pid, controller, buf, len);
}

int cw_cgroup_id_of(const char *root, const char *path, uint64_t *id)
{
	char fn[CW_CGPATH_MAX + 64];
	struct stat st;

	if (!root)
		return -ENOENT;
	if ((size_t)snprintf(fn, sizeof(fn), "%s%s", root, strcmp(path, "/") ? path : "") >= sizeof(fn))
		return -ENAMETOOLONG;
	if (stat(fn, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* On 64-bit kernels >= 5.5 the kernfs inode number is the node id. */
	*id = (uint64_t)st.st_ino;
	return 0;
}

int cw_pid_pod_env(uint32_t pid, struct cw_tenant *t)
{
	char fn[64], *data, *p, *end;
	const char *host = NULL;
	size_t n, hostlen = 0;
	int err;

	snprintf(fn, sizeof(fn), "/proc/%u/environ", pid);
	if ((err = read_capped(fn, CW_ENVIRON_MAX, &data, &n)))
		return err;
	end = data + n;
	for (p = data; p < end; p += strlen(p) + 1) {
		size_t l = strnlen(p, (size_t)(end - p));
		if (l > 9 && !strncmp(p, "POD_NAME=", 9) && cw_k8s_name_valid(p + 9, l - 9, 0))
			snprintf(t->pod, sizeof(t->pod), "%.*s", (int)(l - 9), p + 9);
		else if (l > 14 && !strncmp(p, "POD_NAMESPACE=", 14) && cw_k8s_name_valid(p + 14, l - 14, 1))
			snprintf(t->ns, sizeof(t->ns), "%.*s", (int)(l - 14), p + 14);
		else if (l > 9 && !strncmp(p, "HOSTNAME=", 9) && cw_k8s_name_valid(p + 9, l - 9, 0)) {
			host = p + 9;
			hostlen = l - 9;
		}
	}
	if (!t->pod[0] && host && t->pod_uid[0])
		snprintf(t->pod, sizeof(t->pod), "%.*s", (int)hostlen, host);
	free(data);
	return 0;
}

uint32_t cw_cgroup_first_pid(const char *root, const char *path)
{
	char fn[CW_CGPATH_MAX + 64], buf[32];

	if ((size_t)snprintf(fn, sizeof(fn), "%s%s/cgroup.procs", root, strcmp(path, "/") ? path : "") >= sizeof(fn))
		return 0;
	if (cw_read_small(fn, buf, sizeof(buf)) <= 0)
		return 0;
	return (uint32_t)strtoul(buf, NULL, 10);
}

int cw_tenant_resolve_pid(uint32_t pid, uint64_t want_id, struct cw_cgroup_info *out)
{
	const char *root = cw_cgroup2_root();
	int err;

	memset(out, 0, sizeof(*out));
	if ((err = cw_pid_cgroup_path(pid, out->path, sizeof(out->path))))
		return err;
	if ((err = cw_cgroup_id_of(root, out->path, &out->id)))
		return err;
	if (want_id && out->id != want_id)
		return -ESTALE;
	if ((err = cw_tenant_parse(out->path, &out->t)))
		return err;
	cw_pid_pod_env(pid, &out->t);
	return 0;
}

struct walk {
	int (*cb)(void *, uint64_t, const char *, int);
	void *ctx;
	int count;
	char path[CW_CGPATH_MAX + 1];
	char fs[CW_CGPATH_MAX + 64];
	size_t rootlen;
};

/* w->path holds the cgroup path, w->fs the same under the mount. */
static int walk_dir(struct walk *w, uint64_t id, int depth)
{
	size_t plen = strlen(w->path), flen = strlen(w->fs);
	struct dirent *e;
	DIR *d;
	int r;

	if (w->count >= CW_CGWALK_MAX)
		return 1;
	w->count++;
	if ((r = w->cb(w->ctx, id, plen ? w->path : "/", depth)))
		return r;
	if (depth >= CW_CGWALK_DEPTH || !(d = opendir(w->fs)))
		return 0;
	r = 0;
	while (!r && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;

		if (e->d_type != DT_DIR || e->d_name[0] == '.' || plen + 1 + n > CW_CGPATH_MAX ||
		    flen + 1 + n >= sizeof(w->fs))
			continue;
		w->path[plen] = '/';
		memcpy(w->path + plen + 1, e->d_name, n + 1);
		w->fs[flen] = '/';
		memcpy(w->fs + flen + 1, e->d_name, n + 1);
		if (!stat(w->fs, &st))
			r = walk_dir(w, (uint64_t)st.st_ino, depth + 1);
		w->path[plen] = 0;
		w->fs[flen] = 0;
	}
	closedir(d);
	return r;
}

int cw_cgroup_walk(const char *root, int (*cb)(void *ctx, uint64_t id, const char *path, int depth), void *ctx)
{
	struct walk *w;
	struct stat st;
	int n;

	if (!root)
		return -ENOENT;
	if (stat(root, &st))
		return -errno;
	if (!(w = calloc(1, sizeof(*w))))
		return -ENOMEM;
	w->cb = cb;
	w->ctx = ctx;
	snprintf(w->fs, sizeof(w->fs), "%s", root);
	walk_dir(w, (uint64_t)st.st_ino, 0);
	n = w->count;
	free(w);
	return n;
}

struct find_id {
	uint64_t id;
	char *buf;
	size_t len;
	int found;
};

static int find_cb(void *ctx, uint64_t id, const char *path, int depth)
{
	struct find_id *f = ctx;

	(void)depth;
	if (id != f->id)
		return 0;
	snprintf(f->buf, f->len, "%s", path);
	f->found = 1;
	return 1;
}

int cw_cgroup_path_of_id(const char *root, uint64_t id, char *buf, size_t len)
{
	struct find_id f = { .id = id, .buf = buf, .len = len };
	int n = cw_cgroup_walk(root, find_cb, &f);

	if (n < 0)
		return n;
	return f.found ? 0 : -ENOENT;
}
