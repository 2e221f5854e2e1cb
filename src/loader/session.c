/* session: host facts and per-process identity for the session rows. */
#include "loader/session.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Launchers put a few kB of environment in; a hostile one could put
 * megabytes. 256 kB covers real jobs (CI images run ~20 kB). */
#define ENVIRON_CAP (256 * 1024)

static void first_line(const char *path, const char *key, char *out, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, strlen(key))) {
			char *v = line + strlen(key), *e;

			while (*v == ' ' || *v == '\t' || *v == ':')
				v++;
			e = v + strlen(v);
			while (e > v && isspace((unsigned char)e[-1]))
				*--e = '\0';
			snprintf(out, len, "%s", v);
			break;
		}
	}
	fclose(f);
}

void cw_host_facts_read(struct cw_host_facts *f)
{
	struct utsname u;
	glob_t g;

	memset(f, 0, sizeof(*f));
	if (!uname(&u)) {
		snprintf(f->host, sizeof(f->host), "%s", u.nodename);
		snprintf(f->kernel, sizeof(f->kernel), "%s", u.release);
	}
	/* The NVIDIA kernel module publishes each GPU's model and its own
	 * version without running anything (nvidia.ko >= 3xx). */
	if (!glob("/proc/driver/nvidia/gpus/*/information", 0, NULL, &g) && g.gl_pathc)
		first_line(g.gl_pathv[0], "Model", f->gpu, sizeof(f->gpu));
	globfree(&g);
	{
		char v[256] = "";

		first_line("/proc/driver/nvidia/version", "NVRM version", v, sizeof(v));
		if (v[0]) {
			/* "NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun ..." */
			char *p = strstr(v, "Module");

			if (p) {
				p += 6;
				while (*p == ' ')
					p++;
				snprintf(f->driver, sizeof(f->driver), "%.*s", (int)strcspn(p, " "), p);
			}
		}
	}
}

static int env_int(const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);

	return (*v && !*end && n >= 0 && n < 1 << 24) ? (int)n : -1;
}

void cw_environ_ranks(const char *env, size_t len, int *rank, int *local_rank, int *world_size)
{
	static const struct { const char *name; int which; } keys[] = {
		{ "RANK=", 0 }, { "LOCAL_RANK=", 1 }, { "WORLD_SIZE=", 2 },
		{ "OMPI_COMM_WORLD_RANK=", 0 }, { "OMPI_COMM_WORLD_LOCAL_RANK=", 1 }, { "OMPI_COMM_WORLD_SIZE=", 2 },
		{ "SLURM_PROCID=", 0 }, { "SLURM_LOCALID=", 1 }, { "SLURM_NTASKS=", 2 },
	};
	int vals[3] = { -1, -1, -1 }, prio[3] = { 99, 99, 99 };
	size_t off = 0, k;

	/* Earlier keys win: torchrun's variables describe the process group
	 * even when the job also runs under Slurm. */
	while (off < len) {
		const char *s = env + off;
		size_t n = strnlen(s, len - off);
		char val[32];

		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t kl = strlen(keys[k].name);

			if (n > kl && !strncmp(s, keys[k].name, kl) && (int)k < prio[keys[k].which]) {
				snprintf(val, sizeof(val), "%.*s", (int)(n - kl), s + kl);
				if (env_int(val) >= 0) {
					vals[keys[k].which] = env_int(val);
					prio[keys[k].which] = (int)k;
				}
			}
		}
		off += n + 1;
	}
	*rank = vals[0];
	*local_rank = vals[1];
	*world_size = vals[2];
}

static ssize_t read_capped(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
		got += (size_t)n;
	close(fd);
	return (ssize_t)got;
}

int cw_proc_ranks(uint32_t pid, int *rank, int *local_rank, int *world_size)
{
	char path[64], *buf;
	ssize_t n;

	*rank = *local_rank = *world_size = -1;
	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	buf = malloc(ENVIRON_CAP);
	if (!buf)
		return -ENOMEM;
	n = read_capped(path, buf, ENVIRON_CAP);
	if (n >= 0)
		cw_environ_ranks(buf, (size_t)n, rank, local_rank, world_size);
	free(buf);
	return n < 0 ? (int)n : 0;
}

int cw_proc_identity(uint32_t pid, char *comm, size_t commlen, char *cmdline, size_t cmdlen, uint32_t *ppid)
{
	char path[64], buf[4096];
	ssize_t n, i;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	n = read_capped(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(comm, commlen, "%s", buf);
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	n = read_capped(path, buf, sizeof(buf) - 1);
	if (n < 0)
		n = 0;
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	snprintf(cmdline, cmdlen, "%s", buf);
	*ppid = 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	n = read_capped(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		char *p;

		buf[n] = '\0';
		/* comm may hold spaces and parentheses: parse after the last ')'. */
		p = strrchr(buf, ')');
		if (p) {
			unsigned long pp = 0;

			if (sscanf(p + 1, " %*c %lu", &pp) == 1)
				*ppid = (uint32_t)pp;
		}
	}
	return 0;
}

int cw_proc_python_version(uint32_t pid, char *buf, size_t len)
{
	char path[64], line[4096];
	FILE *f;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "/libpython3.");
		int minor;

		if (!p)
			p = strstr(line, "/python3.");
		if (p && sscanf(strchr(p, '3'), "3.%d", &minor) == 1) {
			snprintf(buf, len, "3.%d", minor);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}
