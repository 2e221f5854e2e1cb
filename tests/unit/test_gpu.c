/* GPU telemetry modules: the Xid parser (kernel-log lines, hostile ones
 * included), the catalogue and deduplication, sample sanitizing, the
 * stall detector's thresholds, thread states read from /proc for threads
 * blocked on a pipe and on a lock, and NVML through the dlopen path with
 * the fake libnvidia-ml.so.1 fixture. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "gpu/nvml.h"
#include "gpu/stall.h"
#include "gpu/threadstate.h"
#include "gpu/xid.h"

#define SEC 1000000000ULL
#define MS 1000000ULL

static int parse(const char *s, struct cw_xid *x)
{
	return cw_xid_parse(s, strlen(s), x);
}

static void test_xid_kmsg_record(void **state)
{
	struct cw_xid x;

	(void)state;
	assert_int_equal(parse("4,1234,987654321,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
			       "GPU has fallen off the bus.\n SUBSYSTEM=pci\n",
			       &x),
			 1);
	assert_int_equal(x.code, 79);
	assert_string_equal(x.pci, "0000:3b:00");
	assert_int_equal(x.pid, 1234);
	assert_string_equal(x.comm, "python");
	assert_string_equal(x.text, "GPU has fallen off the bus.");
	assert_int_equal(x.seq, 1234);
	assert_int_equal(x.ts_usec, 987654321);
}

static void test_xid_variants(void **state)
{
	struct cw_xid x;

	(void)state;
	/* No owning process (R535+ prints pid='<unknown>'). */
	assert_int_equal(parse("NVRM: Xid (PCI:0000:3B:00): 48, pid='<unknown>', name=<unknown>, "
			       "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer",
			       &x),
			 1);
	assert_int_equal(x.code, 48);
	assert_int_equal(x.pid, -1);
	assert_string_equal(x.comm, "");
	assert_string_equal(x.pci, "0000:3b:00");
	/* Pre-R470: no pid/name fields, no "PCI:" prefix. */
	assert_int_equal(parse("[ 1234.5678] NVRM: Xid (0000:af:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1)",
			       &x),
			 1);
	assert_int_equal(x.code, 13);
	assert_string_equal(x.pci, "0000:af:00");
	assert_int_equal(x.pid, -1);
	assert_non_null(strstr(x.text, "Warp Exception"));
	/* Not an Xid line. */
	assert_int_equal(parse("6,99,1000,-;usb 1-1: new high-speed USB device", &x), 0);
	assert_int_equal(parse("NVRM: loading NVIDIA UNIX x86_64 Kernel Module", &x), 0);
	assert_int_equal(parse("", &x), 0);
}

static void test_xid_rejects(void **state)
{
	static const char *const bad[] = {
		"NVRM: Xid (PCI:0000:3b:00): , pid=1, name=a, x",            /* no code */
		"NVRM: Xid (PCI:0000:3b:00): 0, text",                      /* code 0 */
		"NVRM: Xid (PCI:0000:3b:00): 99999, text",                  /* out of range */
		"NVRM: Xid (PCI:0000:3b:00): 1024, text",                   /* above CW_XID_CODE_MAX */
		"NVRM: Xid (PCI:zz:00): 79, text",                          /* not hex */
		"NVRM: Xid (PCI:0000:3b:00:0000:3b:00:0000:3b:00:00): 79, x", /* overlong address */
		"NVRM: Xid (PCI:0000:3b:00 79, text",                       /* unclosed */
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=12x4, name=a, text",   /* bad pid */
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=99999999999, name=a, t", /* pid overflow */
		"NVRM: Xid (PCI:0000:3b:00):79, text",                      /* no space */
	};
	struct cw_xid x;
	char *big;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i], &x);
		if (rc != -EINVAL)
			fail_msg("accepted (%d): %s", rc, bad[i]);
	}
	big = malloc(CW_XID_LINE_MAX + 100);
	assert_non_null(big);
	memset(big, 'A', CW_XID_LINE_MAX + 100);
	memcpy(big, "NVRM: Xid (PCI:0000:3b:00): 79, ", 32);
	assert_int_equal(cw_xid_parse(big, CW_XID_LINE_MAX + 1, &x), -E2BIG);
	/* At the cap it parses, with the text cut to its field. */
	assert_int_equal(cw_xid_parse(big, CW_XID_LINE_MAX, &x), 1);
	assert_int_equal(strlen(x.text), sizeof(x.text) - 1);
	free(big);
	/* Control bytes and a long name are sanitized, not copied raw. */
	assert_int_equal(parse("NVRM: Xid (PCI:0000:3b:00): 31, pid=7, name=py\x1b[2Jthon, fault\x07!", &x), 1);
	assert_null(strchr(x.comm, '\x1b'));
	assert_null(strchr(x.text, '\x07'));
}

static void test_xid_catalogue(void **state)
{
	static const uint32_t required[] = {13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 93, 94, 95, 119, 120};

	(void)state;
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		const struct cw_xid_info *in = cw_xid_lookup(required[i]);
		assert_true(cw_xid_known(required[i]));
		assert_int_equal(in->code, required[i]);
		assert_true(strlen(in->name) > 5 && strlen(in->action) > 20);
	}
	assert_int_equal(cw_xid_severity_rank(79), 3);
	assert_int_equal(cw_xid_severity_rank(48), 3);
	assert_int_equal(cw_xid_severity_rank(95), 3);
	assert_int_equal(cw_xid_severity_rank(13), 1);
	assert_int_equal(cw_xid_severity_rank(45), 0);
	assert_false(cw_xid_known(777));
	assert_string_equal(cw_xid_lookup(777)->name, "Xid 777");
}

static void test_xid_dedup(void **state)
{
	struct cw_xid_dedup d;
	char pci[32];

	(void)state;
	memset(&d, 0, sizeof(d));
	assert_int_equal(cw_xid_dedup_check(&d, "0000:3b:00", 79, 100 * SEC), 0);
	/* The same fault from NVML (same device, same code) 9.9 s later. */
	assert_int_equal(cw_xid_dedup_check(&d, "0000:3b:00", 79, 100 * SEC + 9900 * MS), 1);
	/* An event without a device matches any device. */
	assert_int_equal(cw_xid_dedup_check(&d, "", 79, 101 * SEC), 1);
	/* Another device or code is another fault. */
	assert_int_equal(cw_xid_dedup_check(&d, "0000:5e:00", 79, 101 * SEC), 0);
	assert_int_equal(cw_xid_dedup_check(&d, "0000:3b:00", 48, 101 * SEC), 0);
	/* Past the window it is new again. */
	assert_int_equal(cw_xid_dedup_check(&d, "0000:3b:00", 79, 110 * SEC + 100 * MS), 0);
	assert_int_equal(d.duplicates, 2);
	cw_xid_pci_norm("00000000:3B:00.0", pci, sizeof(pci));
	assert_string_equal(pci, "0000:3b:00");
	cw_xid_pci_norm("3b:00", pci, sizeof(pci));
	assert_string_equal(pci, "0000:3b:00");
}

static void test_sample_sanitize(void **state)
{
	struct cw_gpu_sample s;
	char buf[128];

	(void)state;
	cw_gpu_sample_clear(&s);
	assert_int_equal(s.nvlink_errors, -1);
	assert_int_equal(cw_gpu_sample_sanitize(&s), 0);
	s.gpu_util = 100;
	s.mem_util = 101;
	s.mem_total = 80LL << 30;
	s.mem_used = 81LL << 30;
	s.temp_gpu = 5000;
	s.temp_mem = -41;
	s.sm_mhz = 1980;
	s.mem_mhz = 900000;
	s.power_mw = 10000001;
	s.reasons = (int64_t)CW_GPU_REASON_KNOWN + 1;
	s.remap_pending = 2;
	s.ecc_dbe = 0;
	assert_int_equal(cw_gpu_sample_sanitize(&s), 8);
	assert_int_equal(s.gpu_util, 100);
	assert_int_equal(s.mem_util, -1);
	assert_int_equal(s.mem_used, -1);
	assert_int_equal(s.temp_gpu, -1);
	assert_int_equal(s.temp_mem, -1);
	assert_int_equal(s.sm_mhz, 1980);
	assert_int_equal(s.mem_mhz, -1);
	assert_int_equal(s.power_mw, -1);
	assert_int_equal(s.reasons, -1);
	assert_int_equal(s.remap_pending, -1);
	assert_int_equal(s.ecc_dbe, 0);
	cw_gpu_reasons_text((int64_t)(CW_GPU_REASON_SW_POWER_CAP | CW_GPU_REASON_HW_THERMAL), buf, sizeof(buf));
	assert_string_equal(buf, "sw_power_cap,hw_thermal");
	cw_gpu_reasons_text(0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	cw_gpu_reasons_text((int64_t)CW_GPU_REASON_KNOWN, buf, 12);
	assert_true(strlen(buf) < 12);
}

static int always(uint32_t pid, void *ctx)
{
	(void)pid;
	(void)ctx;
	return 1;
}

static int never(uint32_t pid, void *ctx)
{
	(void)pid;
	(void)ctx;
	return 0;
}

static void steady(struct cw_stall *s, uint32_t pid, uint64_t step, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t = SEC + (uint64_t)i * step;
		for (int k = 0; k < 5; k++) /* five launches per step */
			cw_stall_call(s, pid, pid, "cudaLaunchKernel", t + (uint64_t)k * 10000, t + (uint64_t)k * 10000 + 5000);
		cw_stall_call(s, pid, pid, "cudaStreamSynchronize", t + 100000, t + step / 2);
	}
}

static void test_stall_thresholds(void **state)
{
	struct cw_stall *s;
	struct cw_stall_hit h[4];
	uint64_t last;

	(void)state;
	/* 20 ms steps: the 30 s floor rules. */
	assert_int_equal(cw_stall_new(&s, NULL), 0);
	steady(s, 10, 20 * MS, 50);
	last = SEC + 49 * 20 * MS + 100000; /* the last sync's start */
	assert_int_equal(cw_stall_check(s, last + 29 * SEC, always, NULL, h, 4), 0);
	assert_int_equal(cw_stall_check(s, last + 31 * SEC, never, NULL, h, 4), 0); /* dead is not stalled */
	assert_int_equal(cw_stall_check(s, last + 31 * SEC, always, NULL, h, 4), 1);
	assert_int_equal(h[0].pid, 10);
	assert_int_equal(h[0].step_ns, 20 * MS); /* the per-step sync, not the launches */
	assert_int_equal(h[0].threshold_ns, 30 * SEC);
	assert_string_equal(h[0].last_op, "cudaStreamSynchronize");
	/* Reported once; a new call re-arms it. */
	assert_int_equal(cw_stall_check(s, last + 40 * SEC, always, NULL, h, 4), 0);
	cw_stall_call(s, 10, 10, "cudaStreamSynchronize", last + 41 * SEC, last + 41 * SEC + MS);
	assert_int_equal(cw_stall_check(s, last + 72 * SEC + MS, always, NULL, h, 4), 1);
	cw_stall_free(s);

	/* 5 s steps: 10 steps (50 s) rule over the floor. */
	assert_int_equal(cw_stall_new(&s, NULL), 0);
	steady(s, 11, 5 * SEC, 10);
	last = SEC + 9 * 5 * SEC + 100000;
	assert_int_equal(cw_stall_check(s, last + 49 * SEC, always, NULL, h, 4), 0);
	assert_int_equal(cw_stall_check(s, last + 51 * SEC, always, NULL, h, 4), 1);
	assert_int_equal(h[0].threshold_ns, 50 * SEC);
	cw_stall_free(s);

	/* Too few calls for a rhythm: never a stall. */
	assert_int_equal(cw_stall_new(&s, NULL), 0);
	for (int i = 0; i < 6; i++)
		cw_stall_call(s, 12, 12, "cudaStreamSynchronize", SEC + (uint64_t)i * 20 * MS, SEC + (uint64_t)i * 20 * MS + MS);
	assert_int_equal(cw_stall_check(s, 1000 * SEC, always, NULL, h, 4), 0);
	cw_stall_exited(s, 12);
	cw_stall_free(s);

	/* A configured floor (trace --stall-after). */
	{
		struct cw_stall_opts o = {.floor_ns = 2 * SEC};
		assert_int_equal(cw_stall_new(&s, &o), 0);
		steady(s, 13, 20 * MS, 50);
		last = SEC + 49 * 20 * MS + 100000; /* the last sync's start */
		assert_int_equal(cw_stall_check(s, last + 1900 * MS, always, NULL, h, 4), 0);
		assert_int_equal(cw_stall_check(s, last + 2100 * MS, always, NULL, h, 4), 1);
		cw_stall_free(s);
	}

	/* Summary capture: a 25 ms step whose rows are one sample a second,
	 * the other 39 calls of each second folded in the kernel. The rows
	 * alone say a 1 s step (a 10 s threshold); the folded counts restore
	 * the rhythm, and the 2 s floor rules. */
	for (int fold = 0; fold < 2; fold++) {
		struct cw_stall_opts o = {.floor_ns = 2 * SEC};
		assert_int_equal(cw_stall_new(&s, &o), 0);
		for (int i = 0; i < 20; i++) {
			cw_stall_call(s, 14, 14, "cudaStreamSynchronize", (uint64_t)(i + 1) * SEC, (uint64_t)(i + 1) * SEC + MS);
			cw_stall_row_second(s, 14, "cudaStreamSynchronize", (uint64_t)(i + 1) * SEC,
					    (uint64_t)(5000 + i) * SEC);
			if (fold)
				cw_stall_folded(s, 14, "cudaStreamSynchronize", 5000 + i, 39);
		}
		last = 20 * SEC;
		assert_int_equal(cw_stall_check(s, last + 3 * SEC, always, NULL, h, 4), fold);
		if (fold) {
			assert_int_equal(h[0].step_ns, SEC / 40);
			assert_int_equal(h[0].threshold_ns, 2 * SEC);
		}
		cw_stall_folded(s, 99, "cudaStreamSynchronize", 5019, 39); /* a process never seen: ignored */
		assert_int_equal(cw_stall_check(s, last + 4 * SEC, always, NULL, h, 4), 0);
		cw_stall_free(s);
	}

	/* Summary capture: calls after the latest row's first moments may be
	 * folded and not seen yet, so silence runs from the end of that row's
	 * wall second (0.9 s after it here). */
	{
		struct cw_stall_opts o = {.floor_ns = 2 * SEC, .summary = 1};
		assert_int_equal(cw_stall_new(&s, &o), 0);
		for (int i = 0; i < 20; i++) {
			uint64_t m = (uint64_t)(i + 1) * SEC;
			cw_stall_call(s, 15, 15, "cudaStreamSynchronize", m, m + MS);
			cw_stall_row_second(s, 15, "cudaStreamSynchronize", m, (uint64_t)(5000 + i) * SEC + 100 * MS);
			cw_stall_folded(s, 15, "cudaStreamSynchronize", 5000 + i, 39);
		}
		last = 20 * SEC;
		assert_int_equal(cw_stall_check(s, last + 2800 * MS, always, NULL, h, 4), 0);
		assert_int_equal(cw_stall_check(s, last + 3000 * MS, always, NULL, h, 4), 1);
		cw_stall_free(s);
	}
}

/* Real threads of this process, blocked on a pipe and on a lock. */
static int pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile pid_t tid_pipe, tid_lock;

static void *reader(void *a)
{
	char c;
	(void)a;
	tid_pipe = (pid_t)syscall(SYS_gettid);
	if (read(pipefd[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

static void *locker(void *a)
{
	(void)a;
	tid_lock = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void test_thread_states(void **state)
{
	static struct cw_thread_state th[CW_THREADSTATE_MAX];
	pthread_t a, b;
	int n, seen = 0;
	char desc[320];

	(void)state;
	/* The syscall numbers named per architecture (threadstate.c). */
#if defined(__aarch64__)
	assert_string_equal(cw_thread_wait_class('S', 98, ""), "lock");     /* futex */
	assert_string_equal(cw_thread_wait_class('S', 207, "socket:[9]"), "socket"); /* recvfrom */
	assert_string_equal(cw_thread_wait_class('S', 29, "/dev/nvidia0"), "gpu driver"); /* ioctl */
	assert_string_equal(cw_thread_wait_class('D', 0, "/data/shard"), "disk io");
	assert_string_equal(cw_thread_wait_class('S', 115, ""), "sleep"); /* clock_nanosleep */
#else
	assert_string_equal(cw_thread_wait_class('S', 202, ""), "lock");
#endif
	/* Under qemu-user (the aarch64 unit run), /proc/TID/syscall shows the
	 * emulator's host system calls, not the guest's. */
	if (getenv("CW_QEMU_USER")) {
		print_message("live thread states skipped: qemu-user reports the host's system calls\n");
		return;
	}
	assert_int_equal(pipe(pipefd), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(pthread_create(&a, NULL, reader, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, locker, NULL), 0);
	/* Wait until both are asleep in the kernel. */
	for (int tries = 0; tries < 200 && seen != 2; tries++) {
		usleep(10000);
		n = cw_thread_states(getpid(), th, CW_THREADSTATE_MAX, NULL);
		assert_true(n >= 3);
		seen = 0;
		for (int i = 0; i < n; i++) {
			if (th[i].tid == tid_pipe && !strcmp(th[i].wait, "pipe"))
				seen++;
			if (th[i].tid == tid_lock && !strcmp(th[i].wait, "lock"))
				seen++;
		}
	}
	assert_int_equal(seen, 2);
	for (int i = 0; i < n; i++)
		if (th[i].tid == tid_pipe) {
			assert_int_equal(th[i].state, 'S');
			assert_string_equal(th[i].syscall_name, "read");
			assert_true(!strncmp(th[i].target, "pipe:[", 6));
			cw_thread_state_describe(&th[i], desc, sizeof(desc));
			assert_non_null(strstr(desc, "blocked in read on a pipe (pipe:["));
		}
	pthread_mutex_unlock(&mu);
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	close(pipefd[0]);
	close(pipefd[1]);
	assert_int_equal(cw_thread_states(0x3fffffff, th, 4, NULL), -ESRCH);
	assert_string_equal(cw_thread_wait_class('R', -1, ""), "runnable");
#if defined(__x86_64__)
	assert_string_equal(cw_thread_wait_class('S', 45, "socket:[9]"), "socket");
	assert_string_equal(cw_thread_wait_class('S', 16, "/dev/nvidia0"), "gpu driver");
	assert_string_equal(cw_thread_wait_class('D', 0, "/data/shard"), "disk io");
	assert_string_equal(cw_thread_wait_class('S', 230, ""), "sleep");
#endif
}

static const char *fake_nvml(void)
{
	static char path[512];
	const char *b = getenv("CW_BUILD");

	snprintf(path, sizeof(path), "%s/fixtures/fakenvml/libnvidia-ml.so.1", b ? b : "build");
	return access(path, R_OK) ? NULL : path;
}

static void test_nvml_fake(void **state)
{
	struct cw_nvml *n;
	struct cw_gpu_sample s;
	struct cw_gpu_proc p[4];
	const char *lib = fake_nvml();
	char why[256];
	int dev;
	uint64_t code;

	(void)state;
	if (!lib)
		fail_msg("fake libnvidia-ml.so.1 missing (make fixtures)");
	assert_int_equal(cw_nvml_open(&n, "/nonexistent/libnvidia-ml.so.1", why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "not found"));
	setenv("CW_FAKE_NVML", "fail_init=1", 1);
	assert_int_equal(cw_nvml_open(&n, lib, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "Driver Not Loaded"));
	setenv("CW_FAKE_NVML", "devices=2,throttle=power,mem_pct=50,pid=4242,xid=79@1", 1);
	/* The environment path is the default one. */
	setenv("CW_NVML_LIB", lib, 1);
	assert_int_equal(cw_nvml_open(&n, NULL, why, sizeof(why)), 0);
	unsetenv("CW_NVML_LIB");
	assert_string_equal(cw_nvml_driver(n), "580.65.06-fake");
	assert_int_equal(cw_nvml_count(n), 2);
	assert_string_equal(cw_nvml_device(n, 1)->pci, "00000000:3C:00.0");
	assert_string_equal(cw_nvml_device(n, 0)->uuid, "GPU-fa4e0000-0000-4000-8000-000000000000");
	assert_int_equal(cw_nvml_device(n, 0)->max_sm_mhz, 1980);
	assert_int_equal(cw_nvml_sample(n, 0, &s), 16); /* every reading the fake offers */
	assert_int_equal(s.temp_mem, 70);
	assert_int_equal(s.sm_mhz, 1350);
	assert_int_equal(s.reasons, (int64_t)CW_GPU_REASON_SW_POWER_CAP);
	assert_int_equal(s.power_mw, 700000);
	assert_int_equal(s.mem_total, 80LL << 30);
	assert_int_equal(s.mem_reserved, 512LL << 20);
	assert_int_equal(s.temp_gpu, 62);
	assert_int_equal(s.ecc_sbe, 3);
	assert_int_equal(s.ecc_dbe, 0);
	assert_int_equal(s.pcie_replay, 1);
	assert_int_equal(s.remap_corr, 1);
	assert_int_equal(s.nvlink_errors, 4); /* DL replay 2 on each of two active links */
	assert_int_equal(cw_nvml_processes(n, 0, p, 4), 1);
	assert_int_equal(p[0].pid, 4242);
	assert_int_equal(p[0].used_bytes, (80LL << 30) / 100 * 50);
	assert_int_equal(p[0].sm_util, 88);
	assert_int_equal(cw_nvml_events_enable(n), 2);
	assert_int_equal(cw_nvml_event_wait(n, 0, &dev, &code), 1);
	assert_int_equal(dev, 0);
	assert_int_equal(code, 79);
	assert_int_equal(cw_nvml_event_wait(n, 0, &dev, &code), 0); /* raised once */
	/* Garbage readings are dropped, not stored. */
	setenv("CW_FAKE_NVML", "garbage=1", 1);
	usleep(60000);
	assert_true(cw_nvml_sample(n, 0, &s) > 0);
	assert_int_equal(s.gpu_util, -1);
	assert_int_equal(s.temp_gpu, -1);
	assert_int_equal(s.sm_mhz, -1);
	assert_int_equal(s.reasons, -1);
	assert_int_equal(s.mem_used, -1);
	cw_nvml_close(n);
	unsetenv("CW_FAKE_NVML");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xid_kmsg_record),
		cmocka_unit_test(test_xid_variants),
		cmocka_unit_test(test_xid_rejects),
		cmocka_unit_test(test_xid_catalogue),
		cmocka_unit_test(test_xid_dedup),
		cmocka_unit_test(test_sample_sanitize),
		cmocka_unit_test(test_stall_thresholds),
		cmocka_unit_test(test_thread_states),
		cmocka_unit_test(test_nvml_fake),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
