/* Host snapshot sampler: parsers on fixed /proc samples, snapshot math,
 * and one live sample of this machine's /proc. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/sysinfo.h"

static const char stat1[] =
	"cpu  1000 0 500 8000 500 0 0 0 0 0\n"
	"cpu0 500 0 250 4000 250 0 0 0 0 0\n"
	"cpu1 500 0 250 4000 250 0 0 0 0 0\n"
	"intr 12345 0 0\n"
	"ctxt 999\n";
/* +300 user, +100 system, +500 idle, +100 iowait over the interval:
 * busy 400 of 1000 -> 40 %. */
static const char stat2[] =
	"cpu  1300 0 600 8500 600 0 0 0 0 0\n"
	"cpu0 650 0 300 4250 300 0 0 0 0 0\n"
	"cpu1 650 0 300 4250 300 0 0 0 0 0\n";

static const char meminfo[] =
	"MemTotal:       16000000 kB\n"
	"MemFree:         2000000 kB\n"
	"MemAvailable:    4000000 kB\n"
	"Buffers:          100000 kB\n"
	"Cached:          1000000 kB\n"
	"SwapTotal:       2000000 kB\n"
	"SwapFree:        1500000 kB\n";

static const char meminfo_old[] = /* before 3.14: no MemAvailable, no swap */
	"MemTotal:       1000 kB\n"
	"MemFree:         100 kB\n"
	"Buffers:          50 kB\n"
	"Cached:          250 kB\n";

static const char vmstat1[] =
	"nr_free_pages 100\n"
	"pgalloc_dma 1\n"
	"pgalloc_dma32 100\n"
	"pgalloc_normal 1000\n"
	"pgalloc_movable 0\n"
	"pgfree 5000\n";
static const char vmstat2[] =
	"pgalloc_dma 1\n"
	"pgalloc_dma32 600\n"
	"pgalloc_normal 2500\n"
	"pgalloc_movable 0\n";

/* sda with two partitions, an nvme disk with one, a dm device, a loop and
 * zram device that must not count. */
static const char disk1[] =
	"   8       0 sda 100 0 2000 10 50 0 1000 5 0 100 15 0 0 0 0\n"
	"   8       1 sda1 90 0 1800 9 50 0 1000 5 0 90 14 0 0 0 0\n"
	"   8       2 sda2 10 0 200 1 0 0 0 0 0 10 1 0 0 0 0\n"
	" 259       0 nvme0n1 10 0 100 1 10 0 100 1 0 50 2\n"
	" 259       1 nvme0n1p1 10 0 100 1 10 0 100 1 0 50 2\n"
	" 253       0 dm-0 100 0 3000 10 50 0 1000 5 0 100 15\n"
	"   7       0 loop0 5 0 10 0 0 0 0 0 0 0 0\n"
	" 252       0 zram0 5 0 10 0 0 0 0 0 0 0 0\n";
/* over 2 s: sda +2048 read +2048 written sectors (2 MiB), io_ms +500;
 * nvme +4096 written (2 MiB), io_ms +1500 -> busiest 75 %. */
static const char disk2[] =
	"   8       0 sda 200 0 4048 20 60 0 3048 6 0 600 20 0 0 0 0\n"
	"   8       1 sda1 190 0 3848 19 60 0 3048 6 0 590 19 0 0 0 0\n"
	" 259       0 nvme0n1 10 0 100 1 20 0 4196 1 0 1550 2\n"
	" 253       0 dm-0 999 0 99999 10 50 0 99999 5 0 2000 15\n";

static void test_stat(void **state)
{
	struct cw_sysinfo_raw r = { 0 };

	assert_int_equal(cw_sysinfo_parse_stat(stat1, &r), 0);
	assert_int_equal(r.ncpu, 2);
	assert_int_equal(r.cpu_total, 10000);
	assert_int_equal(r.cpu_busy, 1500);
	assert_int_equal(cw_sysinfo_parse_stat("intr 1 2\n", &r), -EINVAL);
	assert_int_equal(cw_sysinfo_parse_stat("cpu  x y\n", &r), -EINVAL);
}

static void test_meminfo(void **state)
{
	struct cw_sysinfo_raw r = { 0 };

	assert_int_equal(cw_sysinfo_parse_meminfo(meminfo, &r), 0);
	assert_int_equal(r.mem_total, 16000000ull * 1024);
	assert_int_equal(r.mem_avail, 4000000ull * 1024);
	assert_int_equal(r.swap_total - r.swap_free, 500000ull * 1024);
	assert_int_equal(cw_sysinfo_parse_meminfo(meminfo_old, &r), 0);
	assert_int_equal(r.mem_avail, 400ull * 1024);
	assert_int_equal(r.swap_total, 0);
	assert_int_equal(cw_sysinfo_parse_meminfo("Foo: 1 kB\n", &r), -EINVAL);
}

static void test_loadavg(void **state)
{
	struct cw_sysinfo_raw r = { 0 };

	assert_int_equal(cw_sysinfo_parse_loadavg("0.52 0.58 0.59 2/345 6789\n", &r), 0);
	assert_int_equal(r.load1_x100, 52);
	assert_int_equal(cw_sysinfo_parse_loadavg("12.3 1.00 1.00 1/1 1\n", &r), 0);
	assert_int_equal(r.load1_x100, 1230);
	assert_int_equal(cw_sysinfo_parse_loadavg("7 1 1\n", &r), 0);
	assert_int_equal(r.load1_x100, 700);
	assert_int_equal(cw_sysinfo_parse_loadavg("garbage", &r), -EINVAL);
}

static void test_vmstat(void **state)
{
	struct cw_sysinfo_raw r = { 0 };

	assert_int_equal(cw_sysinfo_parse_vmstat(vmstat1, &r), 0);
	assert_int_equal(r.pgalloc, 1101);
	assert_int_equal(cw_sysinfo_parse_vmstat("pgfree 1\n", &r), -EINVAL);
}

static void test_diskstats(void **state)
{
	struct cw_sysinfo_raw r = { 0 };

	assert_int_equal(cw_sysinfo_parse_diskstats(disk1, &r), 0);
	assert_int_equal(r.ndisks, 2);
	assert_string_equal(r.disks[0].name, "sda");
	assert_int_equal(r.disks[0].sectors, 3000);
	assert_int_equal(r.disks[0].io_ms, 100);
	assert_string_equal(r.disks[1].name, "nvme0n1");
	/* Without its disk line a partition is all we have and counts. */
	assert_int_equal(cw_sysinfo_parse_diskstats("8 1 sda1 1 0 8 0 1 0 8 0 0 3 0\n", &r), 0);
	assert_int_equal(r.ndisks, 1);
	assert_int_equal(r.disks[0].sectors, 16);
}

static void test_snapshot(void **state)
{
	struct cw_sysinfo_raw *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct cw_snapshot s;

	assert_int_equal(cw_sysinfo_parse_stat(stat1, a), 0);
	assert_int_equal(cw_sysinfo_parse_vmstat(vmstat1, a), 0);
	assert_int_equal(cw_sysinfo_parse_diskstats(disk1, a), 0);
	assert_int_equal(cw_sysinfo_parse_stat(stat2, b), 0);
	assert_int_equal(cw_sysinfo_parse_meminfo(meminfo, b), 0);
	assert_int_equal(cw_sysinfo_parse_loadavg("1.50 1 1 1/1 1", b), 0);
	assert_int_equal(cw_sysinfo_parse_vmstat(vmstat2, b), 0);
	assert_int_equal(cw_sysinfo_parse_diskstats(disk2, b), 0);

	cw_sysinfo_snapshot(a, b, 123456789, 2000000000ull, &s);
	assert_int_equal(s.hdr.type, CW_REC_SNAPSHOT);
	assert_int_equal(s.hdr.size, sizeof(s));
	assert_int_equal(s.hdr.source, CW_SRC_SYSTEM);
	assert_int_equal(s.hdr.op, CW_OP_snapshot);
	assert_int_equal(s.hdr.ts_ns, 123456789);
	assert_int_equal(s.cpu_pct_x100, 4000);
	assert_int_equal(s.mem_pct_x100, 7500);
	assert_int_equal(s.swap_used_bytes, 500000ull * 1024);
	assert_int_equal(s.load1_x100, 150);
	assert_int_equal(s.ncpu, 2);
	assert_int_equal(s.page_alloc_per_s, 1000); /* 2000 pages in 2 s */
	assert_int_equal(s.io_bytes_per_s, 2 * 1048576); /* 4 MiB in 2 s, dm-0 ignored */
	assert_int_equal(s.io_busy_pct_x100, 7500);

	/* Counters that went backwards (reset) give no rate, not a huge one. */
	cw_sysinfo_snapshot(b, a, 1, 1000000000ull, &s);
	assert_int_equal(s.page_alloc_per_s, 0);
	assert_int_equal(s.io_bytes_per_s, 0);
	assert_int_equal(s.cpu_pct_x100, 0);
	free(a);
	free(b);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The sampler over a fake proc root: the second read sees the later text. */
static void test_sampler_fake_root(void **state)
{
	char dir[] = "/tmp/cw-sysinfo-XXXXXX";
	struct cw_sysinfo *si;
	struct cw_snapshot s;

	assert_non_null(mkdtemp(dir));
	write_file(dir, "stat", stat1);
	write_file(dir, "meminfo", meminfo);
	write_file(dir, "loadavg", "0.10 0 0 1/1 1\n");
	write_file(dir, "vmstat", vmstat1);
	write_file(dir, "diskstats", disk1);
	assert_int_equal(cw_sysinfo_new(&si, dir), 0);
	write_file(dir, "stat", stat2);
	assert_int_equal(cw_sysinfo_sample(si, &s), 0);
	assert_int_equal(s.cpu_pct_x100, 4000);
	assert_int_equal(s.load1_x100, 10);
	assert_int_equal(s.mem_pct_x100, 7500);
	cw_sysinfo_free(si);
	for (const char *n = "stat\0meminfo\0loadavg\0vmstat\0diskstats\0"; *n; n += strlen(n) + 1) {
		char p[512];

		snprintf(p, sizeof(p), "%s/%s", dir, n);
		unlink(p);
	}
	/* A root without the mandatory files is an error, not a zero snapshot. */
	assert_int_equal(cw_sysinfo_new(&si, dir), -ENOENT);
	rmdir(dir);
}

static void test_sampler_live(void **state)
{
	struct cw_sysinfo *si;
	struct cw_snapshot s;

	assert_int_equal(cw_sysinfo_new(&si, NULL), 0);
	usleep(20000);
	assert_int_equal(cw_sysinfo_sample(si, &s), 0);
	assert_true(s.ncpu >= 1);
	assert_true(s.cpu_pct_x100 <= 10000);
	assert_true(s.mem_pct_x100 > 0 && s.mem_pct_x100 <= 10000);
	assert_true(s.io_busy_pct_x100 <= 10000);
	cw_sysinfo_free(si);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat),        cmocka_unit_test(test_meminfo),
		cmocka_unit_test(test_loadavg),     cmocka_unit_test(test_vmstat),
		cmocka_unit_test(test_diskstats),   cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_sampler_fake_root), cmocka_unit_test(test_sampler_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
