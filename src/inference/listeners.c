/* listeners.c: servers from /proc (listeners.h). */
#define _GNU_SOURCE
#include "inference/listeners.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds on what one scan reads from /proc. */
#define MAX_NETNS 64
#define MAX_SOCKS 65536 /* rows kept per namespace table */
#define MAX_FDS 65536   /* descriptors looked at per process */
#define ARGV_MAX 4096

#define TCP_ESTABLISHED 0x01
#define TCP_LISTEN 0x0A

struct sock_ent {
	uint64_t inode;
	uint16_t port;
	uint8_t state;
};

struct netns_tab {
	uint64_t ns;
	struct sock_ent *e;
	size_t n, cap;
	int has_listener; /* a listener on a wanted port (port mode) */
};

struct scan {
	const struct cw_listen_query *q;
	const char *proc;
	struct netns_tab ns[MAX_NETNS];
	size_t nns;
};

static int port_wanted(const struct cw_listen_query *q, uint16_t port)
{
	for (size_t i = 0; i < q->nports; i++)
		if (q->ports[i] == port)
			return 1;
	return 0;
}

static void read_tcp_table(const char *path, struct netns_tab *t)
{
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) { /* the header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f) && t->n < MAX_SOCKS) {
		unsigned port, state;
		unsigned long long inode;
		struct sock_ent *m;

		if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %llu", &port,
			   &state, &inode) != 3 || port > 65535 || !inode)
			continue;
		if (state != TCP_LISTEN && state != TCP_ESTABLISHED)
			continue;
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 64;

			if (!(m = realloc(t->e, cap * sizeof(*m))))
				break;
			t->e = m;
			t->cap = cap;
		}
		t->e[t->n++] = (struct sock_ent){ .inode = inode, .port = (uint16_t)port, .state = (uint8_t)state };
	}
	fclose(f);
}

/* The namespace table of pid, read on its first use in this scan. */
static struct netns_tab *netns_of(struct scan *s, uint32_t pid)
{
	char path[PATH_MAX];
	struct stat st;
	struct netns_tab *t;

	snprintf(path, sizeof(path), "%s/%u/ns/net", s->proc, pid);
	if (stat(path, &st))
		return NULL;
	for (size_t i = 0; i < s->nns; i++)
		if (s->ns[i].ns == (uint64_t)st.st_ino)
			return &s->ns[i];
	if (s->nns == MAX_NETNS)
		return NULL;
	t = &s->ns[s->nns++];
	memset(t, 0, sizeof(*t));
	t->ns = (uint64_t)st.st_ino;
	snprintf(path, sizeof(path), "%s/%u/net/tcp", s->proc, pid);
	read_tcp_table(path, t);
	snprintf(path, sizeof(path), "%s/%u/net/tcp6", s->proc, pid);
	read_tcp_table(path, t);
	for (size_t i = 0; i < t->n; i++)
		if (t->e[i].state == TCP_LISTEN && port_wanted(s->q, t->e[i].port))
			t->has_listener = 1;
	return t;
}

static const struct sock_ent *sock_of(const struct netns_tab *t, uint64_t inode)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->e[i].inode == inode)
			return &t->e[i];
	return NULL;
}

static int pid_wanted(const struct cw_listen_query *q, uint32_t pid)
{
	if (!q->npids)
		return 1;
	for (size_t i = 0; i < q->npids; i++)
		if (q->pids[i] == pid)
			return 1;
	return 0;
}

/* comm and argv of pid; the engine they name, or NULL. */
static const struct cw_engine *engine_of_pid(const char *proc, uint32_t pid, char comm[16])
{
	char path[PATH_MAX], argv[ARGV_MAX];
	ssize_t n = 0;
	int fd;

	comm[0] = 0;
	snprintf(path, sizeof(path), "%s/%u/comm", proc, pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, comm, 15);
		close(fd);
		comm[n > 0 ? n : 0] = 0;
		if (n > 0 && comm[n - 1] == '\n')
			comm[n - 1] = 0;
	}
	snprintf(path, sizeof(path), "%s/%u/cmdline", proc, pid);
	n = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, argv, sizeof(argv) - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	argv[n] = 0;
	return cw_engine_of(comm, argv, (size_t)n);
}

int cw_listeners_scan(const struct cw_listen_query *q, struct cw_listener *out, size_t max,
		      struct cw_listener_conn *conns, size_t maxc, size_t *nconns)
{
	struct scan s = { .q = q, .proc = q->proc_root ? q->proc_root : "/proc" };
	struct dirent *de;
	size_t nout = 0;
	DIR *d = opendir(s.proc);

	*nconns = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[PATH_MAX], link[64], comm[16];
		const struct cw_engine *eng;
		struct netns_tab *t;
		char *end;
		unsigned long v = strtoul(de->d_name, &end, 10);
		uint32_t pid;
		DIR *fdd;
		struct dirent *fe;
		size_t nfd = 0;
		size_t first = nout, first_conn = *nconns;

		if (*end || !v || v > UINT32_MAX)
			continue;
		pid = (uint32_t)v;
		if (!pid_wanted(q, pid))
			continue;
		eng = engine_of_pid(s.proc, pid, comm);
		if (!q->nports && !eng)
			continue;
		if (!(t = netns_of(&s, pid)) || (q->nports && !t->has_listener))
			continue;
		snprintf(path, sizeof(path), "%s/%u/fd", s.proc, pid);
		if (!(fdd = opendir(path)))
			continue;
		while ((fe = readdir(fdd)) && nfd++ < MAX_FDS) {
			unsigned long fdn = strtoul(fe->d_name, &end, 10);
			unsigned long long inode;
			const struct sock_ent *se;
			ssize_t n;

			if (*end || fe->d_name[0] == '.' || fdn > INT_MAX)
				continue;
			snprintf(path, sizeof(path), "%s/%u/fd/%lu", s.proc, pid, fdn);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = 0;
			if (sscanf(link, "socket:[%llu]", &inode) != 1 || !(se = sock_of(t, inode)))
				continue;
			if (se->state == TCP_LISTEN && (q->nports ? port_wanted(q, se->port) : 1) && nout < max) {
				out[nout] = (struct cw_listener){ .pid = pid, .fd = (int)fdn, .port = se->port,
								  .engine = eng };
				memcpy(out[nout].comm, comm, sizeof(comm));
				nout++;
			} else if (se->state == TCP_ESTABLISHED && *nconns < maxc) {
				conns[*nconns] = (struct cw_listener_conn){ .pid = pid, .fd = (int)fdn, .port = se->port };
				++*nconns;
			}
		}
		closedir(fdd);
		/* An established socket is a server's connection when its local
		 * port is one this process listens on (a client socket's local
		 * port is ephemeral); keep only those. */
		{
			size_t k = first_conn;

			for (size_t i = first_conn; i < *nconns; i++) {
				int mine = 0;

				for (size_t j = first; j < nout; j++)
					mine |= out[j].port == conns[i].port;
				if (mine)
					conns[k++] = conns[i];
			}
			*nconns = k;
		}
	}
	closedir(d);
	for (size_t i = 0; i < s.nns; i++)
		free(s.ns[i].e);
	return (int)nout;
}

int cw_inference_parse_ports(const char *s, uint16_t *ports, size_t max)
{
	size_t n = 0;

	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "auto"))
		return 0;
	while (*s) {
		char *end;
		unsigned long v;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = strtoul(s, &end, 10);
		if (!v || v > 65535 || n == max || (*end && *end != ','))
			return -EINVAL;
		ports[n++] = (uint16_t)v;
		s = *end ? end + 1 : end;
		if (*end == ',' && !*s)
			return -EINVAL;
	}
	return (int)n;
}
