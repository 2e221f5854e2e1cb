#define _GNU_SOURCE
#include "pyframe/pyproc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyframe/framewalk.h"
#include "symbol/procmaps.h"
#include "symbol/symfile.h"

#define MAX_TIDS 4096

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "libpython3.11.so.1.0", "python3.10", "python3.12d": the minor from a
 * file name, for 3.10 which exports no Py_Version. -1 unknown. */
static int minor_from_name(const char *path, int *major)
{
	const char *b = base_name(path), *s = strstr(b, "python");
	char *end;
	long mj, mn;

	if (!s)
		return -1;
	s += 6;
	mj = strtol(s, &end, 10);
	if (end == s || *end != '.')
		return -1;
	s = end + 1;
	mn = strtol(s, &end, 10);
	if (end == s || mn < 0 || mn > 99)
		return -1;
	*major = (int)mj;
	return (int)mn;
}

static int is_candidate(const char *path, const char *exe)
{
	const char *b = base_name(path);

	return !strncmp(b, "libpython", 9) || !strcmp(path, exe);
}

struct found {
	char path[256];
	uint64_t runtime, runtime_size, py_version_addr;
	int have_version;
};

static int find_runtime(pid_t pid, const struct cw_map *maps, int n, struct found *f)
{
	char exe[256] = "", link[64], host[512];
	ssize_t len;
	int i, j;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	cw_procmaps_target_view(pid, exe, sizeof(exe));
	/* libpython first: a shared build's executable has no runtime */
	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			struct cw_symfile *sf;
			uint64_t v, sz, base, bias;
			int dup = 0, fd, err;

			if (!maps[i].path[0] || !is_candidate(maps[i].path, exe))
				continue;
			if ((pass == 0) != !strncmp(base_name(maps[i].path), "libpython", 9))
				continue;
			for (j = 0; j < i; j++)
				if (!strcmp(maps[j].path, maps[i].path))
					dup = 1;
			if (dup || (fd = cw_procmaps_open(pid, &maps[i], host, sizeof(host))) < 0)
				continue;
			err = cw_symfile_open_fd(&sf, fd);
			close(fd);
			if (err)
				continue;
			if (cw_symfile_find(sf, "_PyRuntime", &v, &sz) || cw_symfile_offset_to_vaddr(sf, 0, &base) ||
			    cw_procmaps_bias(maps, n, maps[i].path, base, &bias)) {
				cw_symfile_free(sf);
				continue;
			}
			if (!cw_symfile_is_dyn(sf))
				bias = 0;
			snprintf(f->path, sizeof(f->path), "%s", maps[i].path);
			f->runtime = v + bias;
			f->runtime_size = sz;
			if (!cw_symfile_find(sf, "Py_Version", &v, &sz)) {
				f->py_version_addr = v + bias;
				f->have_version = 1;
			}
			cw_symfile_free(sf);
			return 0;
		}
	}
	return -ENOENT;
}

static int read_tids(pid_t pid, uint32_t *tids, int max)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		long t = strtol(de->d_name, NULL, 10);

		if (t > 0)
			tids[n++] = (uint32_t)t;
	}
	closedir(d);
	return n;
}

static int has_tid(const uint32_t *tids, int n, uint32_t t)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == t)
			return 1;
	return 0;
}

/* 3.10 stores pthread_self() in tstate->thread_id. glibc's struct pthread
 * holds the kernel TID at a fixed offset per glibc build (0x2d0 on x86-64
 * glibc 2.28-2.41); rather than trust one, find the offset at which every
 * thread state's pthread holds a live TID of this process. */
static void infer_pthread_tid(struct cw_py_proc *p)
{
	struct cw_py_thread th[64];
	uint32_t tids[MAX_TIDS];
	uint8_t (*buf)[1024];
	int nt, ntid, i, k, ok;

	p->pthread_tid_off = -1;
	ntid = read_tids(p->pid, tids, MAX_TIDS);
	if (ntid <= 0)
		return;
	nt = cw_py_threads(p, th, 64);
	if (nt <= 0)
		return;
	buf = malloc(64 * sizeof(*buf));
	if (!buf)
		return;
	for (i = 0; i < nt; i++) {
		uint64_t pt;

		if (cw_rmem_read_ptr(&p->mem, th[i].tstate + p->off.ts_thread_id, &pt) ||
		    cw_rmem_read(&p->mem, pt, buf[i], sizeof(buf[i])))
			goto out;
	}
	for (k = 0; k + 4 <= (int)sizeof(buf[0]); k += 4) {
		ok = 1;
		for (i = 0; i < nt && ok; i++) {
			uint32_t t;

			memcpy(&t, buf[i] + k, 4);
			ok = has_tid(tids, ntid, t);
			/* distinct threads must carry distinct TIDs */
			for (int j = 0; j < i && ok; j++)
				ok = memcmp(buf[j] + k, buf[i] + k, 4) != 0;
		}
		if (ok) {
			p->pthread_tid_off = k;
			break;
		}
	}
out:
	free(buf);
}

/* NSpid of /proc/PID/task/TID/status: the TID in each PID namespace from
 * the one of our /proc down to the target's. Returns how many (0 unknown)
 * and the innermost in *inner. */
static int nspid(pid_t pid, uint32_t tid, uint32_t *inner)
{
	char path[96], line[256];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/status", (int)pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *s = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (;;) {
			unsigned long v = strtoul(s, &end, 10);

			if (end == s || v > UINT32_MAX)
				break;
			*inner = (uint32_t)v;
			n++;
			s = end;
		}
		break;
	}
	fclose(f);
	return n;
}

static void tidmap_refresh(struct cw_py_proc *p)
{
	uint32_t tids[MAX_TIDS], inner;
	int n = read_tids(p->pid, tids, MAX_TIDS);

	p->ntidmap = 0;
	for (int i = 0; i < n && p->ntidmap < CW_PY_TIDMAP_MAX; i++) {
		if (nspid(p->pid, tids[i], &inner) < 2)
			continue;
		p->tidmap[p->ntidmap].ns = inner;
		p->tidmap[p->ntidmap].host = tids[i];
		p->ntidmap++;
	}
}

uint32_t cw_py_proc_host_tid(struct cw_py_proc *p, uint32_t ns_tid)
{
	if (!p->pidns_nested || !ns_tid)
		return ns_tid;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < p->ntidmap; i++)
			if (p->tidmap[i].ns == ns_tid)
				return p->tidmap[i].host;
		if (!pass)
			tidmap_refresh(p); /* a thread started since */
	}
	return 0;
}

/* Whether at least one thread state's native_thread_id is a live TID of
 * the process (1), or the process cannot be listed (1: nothing to judge). */
static int native_tids_live(struct cw_py_proc *p)
{
	struct cw_py_thread th[64];
	uint32_t tids[MAX_TIDS];
	int ntid = read_tids(p->pid, tids, MAX_TIDS), nt, i;

	if (ntid <= 0)
		return 1;
	nt = cw_py_threads(p, th, 64);
	if (nt <= 0)
		return 0;
	for (i = 0; i < nt; i++)
		if (th[i].tid && has_tid(tids, ntid, th[i].tid))
			return 1;
	return 0;
}

int cw_py_proc_validate(struct cw_py_proc *p)
{
	uint64_t interp, ts, back;

	if (cw_rmem_read_ptr(&p->mem, p->runtime + p->off.rt_interp_head, &interp) || (interp & 7))
		return -EPROTO;
	if (cw_rmem_read_ptr(&p->mem, interp + p->off.is_threads_head, &ts) || (ts & 7))
		return -EPROTO;
	if (cw_rmem_read_u64(&p->mem, ts + p->off.ts_interp, &back) || back != interp)
		return -EPROTO;
	return 0;
}

static void version_str(uint32_t hex, int minor, char *buf, size_t len)
{
	if (hex)
		snprintf(buf, len, "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
	else
		snprintf(buf, len, "3.%d", minor);
}

int cw_py_proc_attach(struct cw_py_proc *p, pid_t pid, char *why, size_t whylen)
{
	struct cw_map *maps = NULL;
	struct found f = { 0 };
	char cookie[8], ver[32];
	int n, err, major = 3, minor = -1;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->pthread_tid_off = -1;
	cw_rmem_init_pid(&p->mem, pid);
	{
		uint32_t inner;

		p->pidns_nested = nspid(pid, (uint32_t)pid, &inner) > 1;
		if (p->pidns_nested)
			tidmap_refresh(p);
	}
	n = cw_procmaps_read(pid, &maps);
	if (n < 0) {
		snprintf(why, whylen, n == -ESRCH ? "no process %d" : "cannot read the memory map of process %d",
			 (int)pid);
		return n;
	}
	err = find_runtime(pid, maps, n, &f);
	free(maps);
	if (err) {
		snprintf(why, whylen, "no python runtime (_PyRuntime) found in process %d", (int)pid);
		return -ENOENT;
	}
	snprintf(p->binary, sizeof(p->binary), "%s", f.path);
	p->runtime = f.runtime;
	err = cw_rmem_read(&p->mem, f.runtime, cookie, sizeof(cookie));
	if (err) {
		snprintf(why, whylen, "cannot read the memory of process %d (%s)", (int)pid, strerror(-err));
		return err == -ESRCH || err == -EPERM ? err : -EFAULT;
	}
	if (!memcmp(cookie, "xdebugpy", 8)) {
		/* 3.13+: the runtime describes itself */
		uint32_t hex;

		err = cw_py_offsets_debug(&p->mem, f.runtime, f.runtime_size, &p->off, &hex, why, whylen);
		if (err)
			return err == -ENOTSUP ? -ENOTSUP : err == -ESRCH || err == -EPERM ? err : -EPROTO;
	} else {
		uint64_t hex = 0;

		if (f.have_version && !cw_rmem_read_u64(&p->mem, f.py_version_addr, &hex)) {
			hex &= 0xffffffff;
			major = (int)(hex >> 24);
			minor = (int)((hex >> 16) & 0xff);
		} else {
			minor = minor_from_name(f.path, &major);
		}
		version_str((uint32_t)hex, minor, ver, sizeof(ver));
		if (minor < 0) {
			snprintf(why, whylen, "cannot tell the python version of \"%s\"", f.path);
			return -ENOTSUP;
		}
		if (major != 3 || cw_py_offsets_builtin(minor, &p->off)) {
			snprintf(why, whylen, "python %s is not supported (3.10 to 3.15 are)", ver);
			return -ENOTSUP;
		}
		p->off.version_hex = (uint32_t)hex;
	}
	err = cw_py_proc_validate(p);
	if (err) {
		version_str(p->off.version_hex, p->off.minor, ver, sizeof(ver));
		snprintf(why, whylen,
			 "python %s in process %d: interpreter structures do not match the known layout (or not initialized yet)",
			 ver, (int)pid);
		return -EPROTO;
	}
	if (p->off.ts_native_thread_id < 0)
		infer_pthread_tid(p);
	else if (!native_tids_live(p)) {
		/* offsets that pass every structural check can still be a
		 * layout shifted by a field (a prerelease): thread states that
		 * name none of the process's threads prove it */
		version_str(p->off.version_hex, p->off.minor, ver, sizeof(ver));
		snprintf(why, whylen,
			 "python %s in process %d: no thread state carries a thread id of the process (layout mismatch)",
			 ver, (int)pid);
		return -EPROTO;
	}
	return 0;
}
