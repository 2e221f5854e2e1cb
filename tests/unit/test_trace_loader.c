/* Trace's pure pieces: library classification and versions, hook lookup in
 * an ELF file, rank environment parsing, and the live view's warnings. */
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bpf/events.h"
#include "trace/view.h"
#include "loader/discover.h"
#include "loader/session.h"
#include "loader/uprobe_attach.h"
#include "util/fileset.h"

static void test_lib_kind(void **state)
{
	(void)state;
	assert_int_equal(cw_lib_kind_of("/usr/local/cuda-13.0/lib64/libcudart.so.13"), CW_LIB_CUDART);
	assert_int_equal(cw_lib_kind_of("/x/site-packages/torch/lib/libcudart-9335f6a2.so.12"), CW_LIB_CUDART);
	assert_int_equal(cw_lib_kind_of("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), CW_LIB_CUDA);
	assert_int_equal(cw_lib_kind_of("/opt/conda/lib/libnccl.so.2"), CW_LIB_NCCL);
	assert_int_equal(cw_lib_kind_of("libcudadevrt.a"), -1);
	assert_int_equal(cw_lib_kind_of("/usr/lib/libcudnn.so.9"), -1);
	assert_int_equal(cw_lib_kind_of("/usr/lib/libcudart_static.a"), -1);
	assert_int_equal(cw_lib_kind_of("/tmp/late.so.13"), -1);
}

/* The key BPF reads (s_dev in the kernel's encoding, inode) finds the
 * mapping and an openable path to the same file. */
static void test_find_file(void **state)
{
	char path[PATH_MAX];
	struct stat st, st2;

	(void)state;
	assert_int_equal(cw_kdev(makedev(259, 3)), (259ull << 20) | 3);
	/* The link's target, not the link: under qemu-user (the aarch64 unit
	 * run) stat() through /proc/self/exe reaches the emulator. */
	assert_non_null(realpath("/proc/self/exe", path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(cw_discover_find_file((uint32_t)getpid(), cw_kdev(st.st_dev), st.st_ino, path, sizeof(path)), 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_true(st2.st_ino == st.st_ino && st2.st_dev == st.st_dev);
	/* A file the process does not map, and a process that is gone. */
	assert_int_equal(cw_discover_find_file((uint32_t)getpid(), cw_kdev(st.st_dev) + 1, st.st_ino, path, sizeof(path)),
			 -ENOENT);
	assert_int_equal(cw_discover_find_file(0x7ffffffe, cw_kdev(st.st_dev), st.st_ino, path, sizeof(path)), -ENOENT);
}

static void test_lib_version(void **state)
{
	char v[32];

	(void)state;
	assert_int_equal(cw_lib_version("/nonexistent/libcuda.so.580.65.06", v, sizeof(v)), 0);
	assert_string_equal(v, "580.65.06");
	assert_int_equal(cw_lib_version("/nonexistent/libnccl.so.2.28.9", v, sizeof(v)), 0);
	assert_string_equal(v, "2.28.9");
	assert_int_equal(cw_lib_version("/nonexistent/libcudart.so", v, sizeof(v)), -ENOENT);
}

static void test_environ_ranks(void **state)
{
	static const char torch[] = "PATH=/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=8\0SLURM_PROCID=7\0";
	static const char slurm[] = "SLURM_PROCID=5\0SLURM_LOCALID=2\0SLURM_NTASKS=16\0";
	static const char ompi[] = "OMPI_COMM_WORLD_RANK=9\0OMPI_COMM_WORLD_SIZE=12\0";
	static const char bad[] = "RANK=x\0WORLD_SIZE=-4\0LOCAL_RANK=";
	int r, l, w;

	(void)state;
	cw_environ_ranks(torch, sizeof(torch) - 1, &r, &l, &w);
	assert_int_equal(r, 3); /* torchrun's RANK wins over Slurm's */
	assert_int_equal(l, 1);
	assert_int_equal(w, 8);
	cw_environ_ranks(slurm, sizeof(slurm) - 1, &r, &l, &w);
	assert_int_equal(r, 5);
	assert_int_equal(l, 2);
	assert_int_equal(w, 16);
	cw_environ_ranks(ompi, sizeof(ompi) - 1, &r, &l, &w);
	assert_int_equal(r, 9);
	assert_int_equal(l, -1);
	assert_int_equal(w, 12);
	/* Garbage and a block cut mid-variable read as unknown. */
	cw_environ_ranks(bad, sizeof(bad) - 1, &r, &l, &w);
	assert_int_equal(r, -1);
	assert_int_equal(l, -1);
	assert_int_equal(w, -1);
}

static void test_hooks_in_file(void **state)
{
	const char *rt = "/usr/local/cuda-13.0/lib64/libcudart.so.13";
	int total = 0, n;

	(void)state;
	/* Our own executable exports none of the hooked functions. */
	assert_int_equal(cw_hooks_in_file("/proc/self/exe", &total), 0);
	assert_true(total > 60);
	assert_int_equal(cw_hooks_in_file("/nonexistent.so", NULL), -ENOENT);
	if (access(rt, R_OK))
		skip();
	n = cw_hooks_in_file(rt, NULL);
	/* 27 names, and the _ptsz/_ptds variants CUDA 13.0 exports. */
	assert_true(n >= 27 + 10);
}

static void test_hook_table(void **state)
{
	const struct cw_hook_def *h;
	int nccl = 0, seen_v2 = 0;

	(void)state;
	for (h = cw_hooks(); h->name; h++) {
		nccl += h->source == CW_SRC_NCCL;
		if (!strcmp(h->name, "cuMemAlloc_v2"))
			seen_v2 = h->op == CW_OP_cuMemAlloc;
	}
	/* 15 since NCCL 2.x plus AlltoAll, InitRankScalable, Abort, Finalize,
	 * GetAsyncError. */
	assert_int_equal(nccl, 20);
	assert_true(seen_v2);
	assert_int_equal(cw_hooks_count(CW_LIB_NCCL), 20);
}

static void offcpu(struct cw_trace_view *v, uint32_t tid, uint32_t reason, const char *by, uint64_t ns)
{
	struct cw_offcpu r;

	memset(&r, 0, sizeof(r));
	r.hdr.type = CW_REC_OFFCPU;
	r.hdr.size = sizeof(r);
	r.hdr.tid = tid;
	r.hdr.pid = 100;
	r.hdr.ts_ns = 1000;
	r.end_ns = 1000 + ns;
	r.reason = reason;
	snprintf(r.by_comm, sizeof(r.by_comm), "%s", by);
	cw_trace_view_record(v, &r, sizeof(r));
}

static void call(struct cw_trace_view *v, uint32_t tid, uint64_t ns)
{
	struct cw_event_row row;

	memset(&row, 0, sizeof(row));
	row.source = "cuda";
	row.op = "cudaStreamSynchronize";
	row.tid = tid;
	row.duration_ns = ns;
	row.has_ret = 1;
	cw_trace_view_observe(v, &row);
}

static void test_view_warning(void **state)
{
	struct cw_trace_view *v;
	char w[3][256];
	int i;

	(void)state;
	assert_int_equal(cw_trace_view_new(&v), 0);
	for (i = 0; i < 200; i++)
		call(v, 7, 1000000);
	for (i = 0; i < 5; i++)
		call(v, 4821, 142000000); /* the slow calls, 2.4 % */
	for (i = 0; i < 23; i++)
		offcpu(v, 4821, CW_OFFCPU_PREEMPTED, "stress-ng", 5000000);
	offcpu(v, 4821, CW_OFFCPU_PREEMPTED, "kworker/0:1", 100000);
	offcpu(v, 7, CW_OFFCPU_PREEMPTED, "other", 100000);
	assert_int_equal(cw_trace_view_warnings(v, w, 3), 1);
	/* p99 is a histogram bucket (within 4.4 %) of 142 ms. */
	assert_non_null(strstr(w[0], "cudaStreamSynchronize p99 1"));
	assert_non_null(strstr(w[0], "ms \u2014 thread 4821 preempted 24 times by stress-ng"));
	assert_null(strstr(w[0], "p99 1.0ms"));
	cw_trace_view_free(v);

	/* Fast calls only: no warning. */
	assert_int_equal(cw_trace_view_new(&v), 0);
	for (i = 0; i < 50; i++)
		call(v, 7, 20000);
	offcpu(v, 7, CW_OFFCPU_PREEMPTED, "stress-ng", 5000000);
	assert_int_equal(cw_trace_view_warnings(v, w, 3), 0);
	cw_trace_view_free(v);
}

/* A file is one (device, inode), however reached; past the bound new files
 * still read as new (reported again, never hidden). */
static void test_fileset(void **state)
{
	static struct cw_fileset s;
	uint64_t i;

	(void)state;
	assert_int_equal(cw_fileset_add(&s, 1, 100), 1);
	assert_int_equal(cw_fileset_add(&s, 1, 100), 0);
	assert_int_equal(cw_fileset_add(&s, 2, 100), 1);
	assert_true(cw_fileset_has(&s, 2, 100));
	assert_false(cw_fileset_has(&s, 2, 101));
	for (i = 0; i < CW_FILESET_MAX; i++)
		cw_fileset_add(&s, 9, i);
	assert_int_equal(s.n, CW_FILESET_MAX);
	assert_int_equal(cw_fileset_add(&s, 10, 1), 1);
	assert_int_equal(cw_fileset_add(&s, 10, 1), 1);
	assert_int_equal(cw_fileset_add(&s, 1, 100), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lib_kind),       cmocka_unit_test(test_lib_version),
		cmocka_unit_test(test_environ_ranks),  cmocka_unit_test(test_hooks_in_file),
		cmocka_unit_test(test_hook_table),     cmocka_unit_test(test_view_warning),
		cmocka_unit_test(test_fileset),        cmocka_unit_test(test_find_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
