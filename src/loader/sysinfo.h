/* sysinfo: the host snapshot sampler behind struct cw_snapshot.
 *
 * Once a second trace reads /proc/stat, /proc/meminfo, /proc/loadavg,
 * /proc/vmstat and /proc/diskstats and turns the counter deltas since the
 * previous read into CPU busy %, memory used %, swap used, load, page
 * allocations per second, block I/O bytes per second and the busiest
 * disk's busy %. The parsers take text (not paths) so tests feed them
 * fixed samples; cw_sysinfo_sample() does the reading.
 */
#ifndef CW_LOADER_SYSINFO_H
#define CW_LOADER_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/events.h"

#define CW_SYSINFO_MAX_DISKS 64

struct cw_disk_counters {
	char name[32];
	uint64_t sectors; /* read + written, 512-byte units */
	uint64_t io_ms;   /* time with I/O in flight */
};

/* One read of the counters. */
struct cw_sysinfo_raw {
	uint64_t cpu_busy, cpu_total; /* jiffies, all CPUs */
	unsigned ncpu;
	uint64_t mem_total, mem_avail; /* bytes */
	uint64_t swap_total, swap_free;
	uint32_t load1_x100;
	uint64_t pgalloc; /* sum of pgalloc_* */
	unsigned ndisks;
	struct cw_disk_counters disks[CW_SYSINFO_MAX_DISKS];
};

/* Parsers: 0, or -EINVAL when the text lacks what they need. */
int cw_sysinfo_parse_stat(const char *text, struct cw_sysinfo_raw *r);
int cw_sysinfo_parse_meminfo(const char *text, struct cw_sysinfo_raw *r);
int cw_sysinfo_parse_loadavg(const char *text, struct cw_sysinfo_raw *r);
int cw_sysinfo_parse_vmstat(const char *text, struct cw_sysinfo_raw *r);
/* Whole disks only: partitions of a listed disk and stacked or virtual
 * devices (dm-, md, loop, ram, zram) would count the same bytes twice. */
int cw_sysinfo_parse_diskstats(const char *text, struct cw_sysinfo_raw *r);

/* Fills s (header included: ts_ns = now_ns, source system, op snapshot)
 * from two reads dt_ns apart. */
void cw_sysinfo_snapshot(const struct cw_sysinfo_raw *prev, const struct cw_sysinfo_raw *cur,
			 uint64_t now_ns, uint64_t dt_ns, struct cw_snapshot *s);

/* Stateful sampler over a proc root ("/proc" when NULL). */
struct cw_sysinfo;
int cw_sysinfo_new(struct cw_sysinfo **out, const char *proc_root);
/* Reads the counters and fills s with the rates since the previous call
 * (since cw_sysinfo_new for the first). Returns 0 or -errno. */
int cw_sysinfo_sample(struct cw_sysinfo *si, struct cw_snapshot *s);
void cw_sysinfo_free(struct cw_sysinfo *si);

#endif
