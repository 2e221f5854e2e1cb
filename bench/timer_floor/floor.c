/* floor LIBRARY FUNCTION: attaches floor.bpf.c's session timer to FUNCTION
 * in LIBRARY (every process mapping it), prints "attached" and waits for
 * SIGINT or SIGTERM, then prints "floor calls N ns_per_call X" from the
 * per-CPU totals, so the bench can check every call was timed. Bench only
 * (bench/trace_overhead.sh builds it); exits 2 when the kernel has no
 * uprobe sessions. */
#include <errno.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floor.skel.h"
#include "loader/elfsyms.h"

/* floor.bpf.c's per-CPU value. */
struct floor_total {
	__u64 calls;
	__u64 ns;
};

/* Kernel ABI (include/uapi/linux/bpf.h of 6.12+); libbpf 1.1's headers
 * predate uprobe_multi links and sessions. */
#define FLOOR_BPF_TRACE_UPROBE_SESSION 57
struct link_create_umulti {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, umulti_flags, pid;
};

/* FUNCTION's file offset in LIBRARY, the way trace finds its hooks
 * (src/loader/elfsyms.h); -1 when it has none. */
static long func_offset(const char *path, const char *func)
{
	struct cw_elf_sym sym;
	struct cw_elf *e;
	uint64_t off;
	long r = -1;

	if (cw_elf_open(&e, path))
		return -1;
	if (!cw_elf_find_sym(e, func, &sym) && !cw_elf_vaddr_to_offset(e, sym.value, &off))
		r = (long)off;
	cw_elf_close(e);
	return r;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct link_create_umulti *lc;
	struct floor_total *per_cpu;
	unsigned long long calls = 0, ns = 0;
	union bpf_attr attr;
	struct floor_bpf *skel;
	__u64 offset;
	long off;
	int ncpu, link, i;
	__u32 zero = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: floor LIBRARY FUNCTION\n");
		return 1;
	}
	off = func_offset(argv[1], argv[2]);
	if (off < 0) {
		fprintf(stderr, "floor: no function %s in %s\n", argv[2], argv[1]);
		return 1;
	}
	skel = floor_bpf__open();
	if (!skel)
		return 1;
	bpf_program__set_expected_attach_type(skel->progs.floor_timer, FLOOR_BPF_TRACE_UPROBE_SESSION);
	if (floor_bpf__load(skel)) {
		fprintf(stderr, "floor: this kernel does not load uprobe session programs (needs >= 6.12)\n");
		return 2;
	}
	offset = (__u64)off;
	memset(&attr, 0, sizeof(attr));
	lc = (struct link_create_umulti *)&attr;
	lc->prog_fd = (__u32)bpf_program__fd(skel->progs.floor_timer);
	lc->attach_type = FLOOR_BPF_TRACE_UPROBE_SESSION;
	lc->path = (__u64)(uintptr_t)argv[1];
	lc->offsets = (__u64)(uintptr_t)&offset;
	lc->cnt = 1;
	link = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (link < 0) {
		fprintf(stderr, "floor: attaching to %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("attached %s+0x%lx\n", argv[2], off);
	fflush(stdout);
	while (!stop)
		pause();
	ncpu = libbpf_num_possible_cpus();
	per_cpu = calloc((size_t)ncpu, sizeof(*per_cpu));
	if (!per_cpu || bpf_map_lookup_elem(bpf_map__fd(skel->maps.floor_totals), &zero, per_cpu))
		return 1;
	for (i = 0; i < ncpu; i++) {
		calls += per_cpu[i].calls;
		ns += per_cpu[i].ns;
	}
	printf("floor calls %llu ns_per_call %.1f\n", calls, calls ? (double)ns / (double)calls : 0.0);
	close(link);
	floor_bpf__destroy(skel);
	free(per_cpu);
	return 0;
}
