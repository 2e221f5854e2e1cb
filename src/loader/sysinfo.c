/* sysinfo.c: host snapshot sampler (see sysinfo.h). Formats as documented
 * in the kernel's Documentation/filesystems/proc.rst and
 * Documentation/admin-guide/iostats.rst; stable since 2.6.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loader/sysinfo.h"

struct cw_sysinfo {
	char root[256];
	struct cw_sysinfo_raw prev;
	uint64_t prev_ns;
};

static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');

	return nl ? nl + 1 : NULL;
}

/* "cpu  user nice system idle iowait irq softirq steal guest guest_nice";
 * guest time is already part of user, so it is not added again. */
int cw_sysinfo_parse_stat(const char *text, struct cw_sysinfo_raw *r)
{
	int found = 0;

	r->ncpu = 0;
	for (const char *p = text; p && *p; p = next_line(p)) {
		unsigned long long v[8] = { 0 };

		if (strncmp(p, "cpu", 3) != 0)
			continue;
		if (p[3] >= '0' && p[3] <= '9') {
			r->ncpu++;
			continue;
		}
		if (p[3] != ' ')
			continue;
		if (sscanf(p + 3, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
			   &v[4], &v[5], &v[6], &v[7]) < 4)
			return -EINVAL;
		r->cpu_total = 0;
		for (int i = 0; i < 8; i++)
			r->cpu_total += v[i];
		r->cpu_busy = r->cpu_total - v[3] - v[4]; /* minus idle and iowait */
		found = 1;
	}
	return found ? 0 : -EINVAL;
}

static int meminfo_field(const char *text, const char *key, uint64_t *out)
{
	size_t n = strlen(key);

	for (const char *p = text; p && *p; p = next_line(p)) {
		unsigned long long kb;

		if (strncmp(p, key, n) == 0 && p[n] == ':' && sscanf(p + n + 1, "%llu", &kb) == 1) {
			*out = (uint64_t)kb * 1024;
			return 0;
		}
	}
	return -ENOENT;
}

int cw_sysinfo_parse_meminfo(const char *text, struct cw_sysinfo_raw *r)
{
	uint64_t free_b = 0, buffers = 0, cached = 0;

	if (meminfo_field(text, "MemTotal", &r->mem_total))
		return -EINVAL;
	/* MemAvailable exists since 3.14; before, free + buffers + cache is
	 * the usual estimate. */
	if (meminfo_field(text, "MemAvailable", &r->mem_avail)) {
		meminfo_field(text, "MemFree", &free_b);
		meminfo_field(text, "Buffers", &buffers);
		meminfo_field(text, "Cached", &cached);
		r->mem_avail = free_b + buffers + cached;
	}
	if (meminfo_field(text, "SwapTotal", &r->swap_total))
		r->swap_total = 0;
	if (meminfo_field(text, "SwapFree", &r->swap_free))
		r->swap_free = r->swap_total;
	return 0;
}

/* "0.52 0.58 0.59 2/345 6789". Parsed by hand: strtod would follow the
 * process locale's decimal separator. */
int cw_sysinfo_parse_loadavg(const char *text, struct cw_sysinfo_raw *r)
{
	const char *p = text;
	uint64_t ip = 0, frac = 0;
	int digits = 0;

	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9')
		ip = ip * 10 + (uint64_t)(*p++ - '0');
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (digits < 2) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				digits++;
			}
			p++;
		}
	}
	while (digits < 2) {
		frac *= 10;
		digits++;
	}
	r->load1_x100 = (uint32_t)(ip * 100 + frac);
	return 0;
}

/* Sum of pgalloc_<zone> (dma, dma32, normal, movable, device). */
int cw_sysinfo_parse_vmstat(const char *text, struct cw_sysinfo_raw *r)
{
	int found = 0;

	r->pgalloc = 0;
	for (const char *p = text; p && *p; p = next_line(p)) {
		const char *sp;
		unsigned long long v;

		if (strncmp(p, "pgalloc_", 8) != 0)
			continue;
		sp = strchr(p, ' ');
		if (sp && sscanf(sp, "%llu", &v) == 1) {
			r->pgalloc += v;
			found = 1;
		}
	}
	return found ? 0 : -EINVAL;
}

static int skipped_device(const char *name)
{
	static const char *const pfx[] = { "loop", "ram", "zram", "dm-", "md", "sr", "fd" };

	for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
		if (strncmp(name, pfx[i], strlen(pfx[i])) == 0)
			return 1;
	return 0;
}

/* name is a partition of disk: disk + digits (sda1, vda2) or disk + "p" +
 * digits (nvme0n1p1, mmcblk0p1). */
static int is_partition_of(const char *name, const char *disk)
{
	size_t n = strlen(disk);
	const char *p = name + n;

	if (strncmp(name, disk, n) != 0 || !*p)
		return 0;
	if (*p == 'p' && p[1])
		p++;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

/* "major minor name reads rmerged rsectors rms writes wmerged wsectors wms
 *  inflight io_ms weighted_ms ..." */
int cw_sysinfo_parse_diskstats(const char *text, struct cw_sysinfo_raw *r)
{
	unsigned n = 0;

	for (const char *p = text; p && *p; p = next_line(p)) {
		unsigned maj, min;
		char name[32];
		unsigned long long f[10];

		if (sscanf(p, "%u %u %31s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &maj, &min, name,
			   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9]) != 13)
			continue;
		if (skipped_device(name) || n >= CW_SYSINFO_MAX_DISKS)
			continue;
		snprintf(r->disks[n].name, sizeof(r->disks[n].name), "%s", name);
		r->disks[n].sectors = f[2] + f[6];
		r->disks[n].io_ms = f[9];
		n++;
	}
	/* Drop partitions whose disk is listed (the disk line counts them). */
	r->ndisks = 0;
	for (unsigned i = 0; i < n; i++) {
		int part = 0;

		for (unsigned j = 0; j < n && !part; j++)
			part = j != i && is_partition_of(r->disks[i].name, r->disks[j].name);
		if (!part)
			r->disks[r->ndisks++] = r->disks[i];
	}
	return 0;
}

static uint64_t delta(uint64_t cur, uint64_t prev)
{
	return cur > prev ? cur - prev : 0; /* reset or wrap: no rate */
}

void cw_sysinfo_snapshot(const struct cw_sysinfo_raw *prev, const struct cw_sysinfo_raw *cur,
			 uint64_t now_ns, uint64_t dt_ns, struct cw_snapshot *s)
{
	uint64_t dtotal = delta(cur->cpu_total, prev->cpu_total);
	uint64_t dbusy = delta(cur->cpu_busy, prev->cpu_busy);
	uint64_t io_bytes = 0, busiest = 0;

	memset(s, 0, sizeof(*s));
	s->hdr.type = CW_REC_SNAPSHOT;
	s->hdr.size = sizeof(*s);
	s->hdr.version = CW_EVENTS_VERSION;
	s->hdr.source = CW_SRC_SYSTEM;
	s->hdr.op = CW_OP_snapshot;
	s->hdr.ts_ns = now_ns;
	if (dtotal)
		s->cpu_pct_x100 = (uint32_t)(dbusy > dtotal ? 10000 : dbusy * 10000 / dtotal);
	if (cur->mem_total && cur->mem_avail <= cur->mem_total)
		s->mem_pct_x100 = (uint32_t)((cur->mem_total - cur->mem_avail) * 10000 / cur->mem_total);
	s->swap_used_bytes = cur->swap_total > cur->swap_free ? cur->swap_total - cur->swap_free : 0;
	s->load1_x100 = cur->load1_x100;
	s->ncpu = cur->ncpu;
	if (!dt_ns)
		return;
	s->page_alloc_per_s = (uint64_t)((double)delta(cur->pgalloc, prev->pgalloc) * 1e9 / (double)dt_ns);
	for (unsigned i = 0; i < cur->ndisks; i++) {
		for (unsigned j = 0; j < prev->ndisks; j++) {
			if (strcmp(cur->disks[i].name, prev->disks[j].name) != 0)
				continue;
			io_bytes += delta(cur->disks[i].sectors, prev->disks[j].sectors) * 512;
			if (delta(cur->disks[i].io_ms, prev->disks[j].io_ms) > busiest)
				busiest = delta(cur->disks[i].io_ms, prev->disks[j].io_ms);
			break;
		}
	}
	s->io_bytes_per_s = (uint64_t)((double)io_bytes * 1e9 / (double)dt_ns);
	/* io_ms is in ms, dt in ns: share = io_ms * 1e6 / dt. */
	busiest = (uint64_t)((double)busiest * 1e6 * 10000.0 / (double)dt_ns);
	s->io_busy_pct_x100 = (uint32_t)(busiest > 10000 ? 10000 : busiest);
}

/* Reads a whole small /proc file; they are generated, so one read may
 * return less than the file and we loop. */
static int slurp(const char *root, const char *name, char *buf, size_t cap)
{
	char path[512];
	size_t len = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	return 0;
}

static int read_raw(const char *root, struct cw_sysinfo_raw *r)
{
	/* /proc/stat grows with CPUs (about 150 bytes each) and /proc/vmstat
	 * is ~10 KiB; 256 KiB covers hosts with over a thousand CPUs. */
	size_t cap = 256 * 1024;
	char *buf = malloc(cap);
	int rc;

	if (!buf)
		return -ENOMEM;
	memset(r, 0, sizeof(*r));
	rc = slurp(root, "stat", buf, cap);
	if (!rc)
		rc = cw_sysinfo_parse_stat(buf, r);
	if (!rc && !(rc = slurp(root, "meminfo", buf, cap)))
		rc = cw_sysinfo_parse_meminfo(buf, r);
	if (!rc && !(rc = slurp(root, "loadavg", buf, cap)))
		rc = cw_sysinfo_parse_loadavg(buf, r);
	/* vmstat and diskstats may be absent in minimal containers: the
	 * snapshot then reports no page-alloc or I/O rate. */
	if (!rc && !slurp(root, "vmstat", buf, cap))
		cw_sysinfo_parse_vmstat(buf, r);
	if (!rc && !slurp(root, "diskstats", buf, cap))
		cw_sysinfo_parse_diskstats(buf, r);
	free(buf);
	return rc;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cw_sysinfo_new(struct cw_sysinfo **out, const char *proc_root)
{
	struct cw_sysinfo *si = calloc(1, sizeof(*si));
	int rc;

	*out = NULL;
	if (!si)
		return -ENOMEM;
	snprintf(si->root, sizeof(si->root), "%s", proc_root ? proc_root : "/proc");
	rc = read_raw(si->root, &si->prev);
	if (rc) {
		free(si);
		return rc;
	}
	si->prev_ns = mono_ns();
	*out = si;
	return 0;
}

int cw_sysinfo_sample(struct cw_sysinfo *si, struct cw_snapshot *s)
{
	struct cw_sysinfo_raw *cur = malloc(sizeof(*cur));
	uint64_t now;
	int rc;

	if (!cur)
		return -ENOMEM;
	rc = read_raw(si->root, cur);
	if (!rc) {
		now = mono_ns();
		cw_sysinfo_snapshot(&si->prev, cur, now, now - si->prev_ns, s);
		si->prev = *cur;
		si->prev_ns = now;
	}
	free(cur);
	return rc;
}

void cw_sysinfo_free(struct cw_sysinfo *si)
{
	free(si);
}
