/* Who answers on the NCCL RAS port (ras_source.h). */
#define _GNU_SOURCE
#include "trace/ras_source.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_LISTENERS 16
#define MAX_FDS_PER_PID 65536
#define ENV_MAX (256u << 10) /* bytes of a rank's environment read */

static const char *root_of(const char *proc_root)
{
	return proc_root && *proc_root ? proc_root : "/proc";
}

/* The 16 bytes /proc/net/tcp6 shows for an address ("%08X" x 4 of the
 * kernel's 32-bit words, each in host order), and 4 for tcp. */
static int hex_addr(const char *s, size_t n, unsigned char *out)
{
	for (size_t w = 0; w < n / 8; w++) {
		char word[9];
		uint32_t v;
		char *end;

		memcpy(word, s + w * 8, 8);
		word[8] = '\0';
		v = (uint32_t)strtoul(word, &end, 16);
		if (*end)
			return -1;
		memcpy(out + w * 4, &v, 4); /* the kernel printed its in-memory word */
	}
	return 0;
}

struct listeners {
	uint64_t exact[MAX_LISTENERS], wild[MAX_LISTENERS];
	int nexact, nwild;
};

/* Listening sockets (state 0A) on port, at addr (16 bytes: v6 or v4-mapped)
 * or a wildcard, from one /proc/net/tcp{,6} file. */
static void scan_net(const char *path, int v6, const unsigned char *addr16, int port, struct listeners *l)
{
	static const unsigned char zero[16], mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char local[64], remote[64];
		unsigned st, lport;
		uint64_t inode;
		unsigned char a[16] = {0};
		char *colon;

		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %*s %*s %" SCNu64, local, remote, &st, &inode) != 4 ||
		    st != 0x0A || !(colon = strchr(local, ':')))
			continue;
		lport = (unsigned)strtoul(colon + 1, NULL, 16);
		if ((int)lport != port || (size_t)(colon - local) != (v6 ? 32u : 8u))
			continue;
		if (v6) {
			if (hex_addr(local, 32, a))
				continue;
		} else {
			memcpy(a, mapped, 12);
			if (hex_addr(local, 8, a + 12))
				continue;
		}
		if (!memcmp(a, addr16, 16)) {
			if (l->nexact < MAX_LISTENERS)
				l->exact[l->nexact++] = inode;
		} else if (!memcmp(a, zero, 16) || (!memcmp(a, mapped, 12) && !memcmp(a + 12, zero, 4))) {
			if (l->nwild < MAX_LISTENERS)
				l->wild[l->nwild++] = inode;
		}
	}
	fclose(f);
}

/* 1 when pid holds a socket of inodes[0..n). */
static int holds(const char *proc, uint32_t pid, const uint64_t *inodes, int n)
{
	char path[96];
	DIR *d;
	struct dirent *e;
	int seen = 0, found = 0;

	snprintf(path, sizeof(path), "%s/%u/fd", proc, pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && seen++ < MAX_FDS_PER_PID && (e = readdir(d))) {
		char link[64];
		ssize_t len;
		uint64_t ino;

		if (e->d_name[0] == '.')
			continue;
		len = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%" SCNu64 "]", &ino) != 1)
			continue;
		for (int i = 0; i < n; i++)
			if (inodes[i] && inodes[i] == ino)
				found = 1;
	}
	closedir(d);
	return found;
}

int trace_ras_source_check(int fd, const uint32_t *pids, int npids, const char *proc_root, char *why, size_t wlen)
{
	const char *proc = root_of(proc_root);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned char a16[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char host[INET6_ADDRSTRLEN] = "?", path[96];
	struct listeners l = {0};
	const uint64_t *inodes;
	int port, n;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

		memcpy(a16 + 12, &in->sin_addr, 4);
		port = ntohs(in->sin_port);
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

		memcpy(a16, &in6->sin6_addr, 16);
		port = ntohs(in6->sin6_port);
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
	} else {
		return -EAFNOSUPPORT;
	}
	/* The connection was made from this process's network namespace. */
	snprintf(path, sizeof(path), "%s/self/net/tcp", proc);
	scan_net(path, 0, a16, port, &l);
	snprintf(path, sizeof(path), "%s/self/net/tcp6", proc);
	scan_net(path, 1, a16, port, &l);
	/* The kernel hands a connection to the listener bound to the exact
	 * address before one bound to a wildcard. */
	inodes = l.nexact ? l.exact : l.wild;
	n = l.nexact ? l.nexact : l.nwild;
	if (!n) {
		snprintf(why, wlen, "no listening socket found on %s:%d", host, port);
		return 0;
	}
	for (int i = 0; i < npids; i++)
		if (holds(proc, pids[i], inodes, n)) {
			snprintf(why, wlen, "the listener on %s:%d is held by rank process %u", host, port, pids[i]);
			return 1;
		}
	snprintf(why, wlen, "the listener on %s:%d (socket %" PRIu64 ") is held by none of the job's %d rank process%s",
		 host, port, inodes[0], npids, npids == 1 ? "" : "es");
	return 0;
}

int trace_ras_source_env(uint32_t pid, const char *proc_root, int *enabled, char *host, size_t hlen, int *port)
{
	char path[96], *buf;
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/environ", root_of(proc_root), pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	buf = malloc(ENV_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while ((size_t)n < ENV_MAX) {
		ssize_t r = read(fd, buf + n, ENV_MAX - (size_t)n);

		if (r <= 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	for (char *v = buf; v < buf + n; v += strlen(v) + 1) {
		if (!strncmp(v, "NCCL_RAS_ENABLE=", 16)) {
			*enabled = strcmp(v + 16, "0") != 0;
		} else if (!strncmp(v, "NCCL_RAS_ADDR=", 14)) {
			const char *a = v + 14, *colon = strrchr(a, ':');
			char *end;
			long p;

			if (!colon || colon == a || (size_t)(colon - a) >= hlen)
				continue;
			p = strtol(colon + 1, &end, 10);
			if (*end || p < 1 || p > 65535)
				continue;
			/* "[::1]:28028" */
			if (*a == '[' && colon[-1] == ']')
				snprintf(host, hlen, "%.*s", (int)(colon - a - 2), a + 1);
			else
				snprintf(host, hlen, "%.*s", (int)(colon - a), a);
			*port = (int)p;
		}
	}
	free(buf);
	return 0;
}
