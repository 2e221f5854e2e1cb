/* floor LIBRARY FUNCTION: attaches floor.bpf.c's session timer to FUNCTION
 * in LIBRARY (every process mapping it), prints "attached" and waits for
 * SIGINT or SIGTERM, then prints "floor calls N ns_per_call X" from the
 * per-CPU totals, so the bench can check every call was timed. Bench only
 * (bench/trace_overhead.sh builds it); exits 2 when the kernel has no
 * uprobe sessions. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
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

/* FUNCTION's file offset in LIBRARY: its dynamic symbol's address, moved
 * into the file by the loadable segment that holds it. */
static long func_offset(const char *path, const char *func)
{
	long off = -1;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nph, i;
	Elf *e;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)))
		return -1;
	while (off < 0 && (scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Sym s;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(d = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
				continue;
			n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && !strcmp(n, func)) {
				off = (long)s.st_value;
				break;
			}
		}
	}
	if (off >= 0 && !elf_getphdrnum(e, &nph)) {
		for (i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
			    (GElf_Addr)off >= ph.p_vaddr && (GElf_Addr)off < ph.p_vaddr + ph.p_memsz) {
				off = off - (long)ph.p_vaddr + (long)ph.p_offset;
				break;
			}
		}
	}
	elf_end(e);
	close(fd);
	return off;
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
