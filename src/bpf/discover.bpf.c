// SPDX-License-Identifier: GPL-2.0
/* discover: library loads and execs of traced processes, seen as they
 * happen, so a CUDA/NCCL library copy is attached before its first call
 * (discover.bpf.h says how; docs/probes-cuda.md, "Discovery").
 *
 * The mappings are walked with the task VMA iterator kfuncs (Linux 6.7);
 * only executable file mappings are looked at, and only a file whose name
 * is that of a hooked library (or, at exec, the image's loader) and that
 * is missing from the seen map costs more than a few loads. */
#include "common.bpf.h"
#include "bpf/discover.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define CW_SIGSTOP 19
#define CW_VM_EXEC 0x4ul

/* 1: only processes in cw_tracked; 0: every process. */
const volatile __u8 cfg_filter_tracked = 1;
/* 1: stop a process that maps an unseen file until userspace resumes it. */
const volatile __u8 cfg_hold = 1;
/* The agent itself, never stopped. */
const volatile __u32 cfg_self_tgid = 0;

CW_DECLARE_RING(rb_discover, 64 << 10);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct cw_disc_file);
	__type(value, __u32);
} disc_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct cw_disc_hold);
} disc_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_DS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} disc_stats SEC(".maps");

/* Weak: the programs that walk the mappings load only where the kernel
 * has the iterator (6.7); the *_maps programs below serve older kernels. */
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, __u64 addr) __ksym __weak;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym __weak;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym __weak;

static __always_inline void ds(__u32 idx)
{
	cw_count(&disc_stats, idx);
}

/* "X.so" or "X-" right after "lib" + name (auditwheel renames bundled
 * copies libcudart-<hash>.so.12); the same rule as cw_lib_kind_of(). */
static __always_inline int so_after(const char *n, int at)
{
	return n[at] == '-' || (n[at] == '.' && n[at + 1] == 's' && n[at + 2] == 'o');
}

static __always_inline int hooked_name(const char *n)
{
	if (n[0] != 'l' || n[1] != 'i' || n[2] != 'b')
		return 0;
	if (n[3] == 'c' && n[4] == 'u' && n[5] == 'd' && n[6] == 'a') {
		if (n[7] == 'r' && n[8] == 't')
			return so_after(n, 9);
		return so_after(n, 7);
	}
	return n[3] == 'n' && n[4] == 'c' && n[5] == 'c' && n[6] == 'l' && so_after(n, 7);
}

static __always_inline int in_scope(__u32 tgid)
{
	if (tgid == cfg_self_tgid)
		return 0;
	return !cfg_filter_tracked || cw_tgid_tracked(tgid);
}

static __always_inline int listed(const struct cw_disc_event *ev, const struct cw_disc_file *f)
{
	int i;

	for (i = 0; i < CW_DISC_MAX_FILES; i++)
		if (i < ev->nfiles && ev->files[i].dev == f->dev && ev->files[i].ino == f->ino)
			return 1;
	return 0;
}

static __always_inline void add_file(struct cw_disc_event *ev, const struct cw_disc_file *f)
{
	__u32 i = ev->nfiles;

	if (listed(ev, f))
		return;
	if (i >= CW_DISC_MAX_FILES) {
		ev->more = 1;
		return;
	}
	ev->files[i] = *f;
	ev->nfiles = i + 1;
}

/* Unseen executable file mappings of the current task into ev: hooked
 * library names (want_loader 0), or every file but the main executable
 * (want_loader 1: right after exec that is the ELF interpreter). */
static __always_inline void scan(struct cw_disc_event *ev, int want_loader)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct inode *exe = BPF_CORE_READ(task, mm, exe_file, f_inode);
	struct cw_disc_file last = { 0, 0 };
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;

	bpf_iter_task_vma_new(&it, task, 0);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		struct cw_disc_file f;
		struct inode *ino;
		struct file *file;
		char name[16];

		file = BPF_CORE_READ(vma, vm_file);
		if (!file || !(BPF_CORE_READ(vma, vm_flags) & CW_VM_EXEC))
			continue;
		ino = BPF_CORE_READ(file, f_inode);
		if (!ino || ino == exe)
			continue;
		f.dev = BPF_CORE_READ(ino, i_sb, s_dev);
		f.ino = BPF_CORE_READ(ino, i_ino);
		if (f.dev == last.dev && f.ino == last.ino)
			continue;
		last = f;
		if (!want_loader) {
			const unsigned char *nm = BPF_CORE_READ(file, f_path.dentry, d_name.name);

			__builtin_memset(name, 0, sizeof(name));
			if (bpf_probe_read_kernel_str(name, sizeof(name), nm) < 0 || !hooked_name(name))
				continue;
		}
		if (bpf_map_lookup_elem(&disc_seen, &f))
			continue;
		add_file(ev, &f);
		if (want_loader)
			break;
	}
	bpf_iter_task_vma_destroy(&it);
}

/* walk: 1 to look at the mappings here (the VMA iterator); 0 to stop the
 * process at every event and let userspace read its maps (kernels before
 * 6.7; loaded for tracked processes only: a launched command and --pid). */
static __always_inline int report(__u32 kind, int want_loader, const int walk)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct cw_disc_event ev;

	if (!in_scope(tgid))
		return 0;
	ds(kind == CW_DISC_LOAD ? CW_DS_LOADS : CW_DS_EXECS);
	__builtin_memset(&ev, 0, sizeof(ev));
	if (walk) {
		scan(&ev, want_loader);
		if (!ev.nfiles)
			return 0;
	} else {
		ev.more = 1; /* nothing listed: userspace reads the maps */
	}
	ev.ts_ns = bpf_ktime_get_ns();
	ev.pid = tgid;
	ev.tid = (__u32)id;
	ev.kind = kind;
	if (cfg_hold) {
		struct cw_disc_hold h = { .ts_ns = ev.ts_ns, .tid = ev.tid, .kind = kind };

		/* Recorded before the signal: whoever resumes (the agent, its
		 * sweep, or its watchdog when the agent died) finds it here. */
		if (bpf_map_update_elem(&disc_held, &tgid, &h, BPF_ANY) == 0) {
			bpf_send_signal(CW_SIGSTOP);
			ev.held = 1;
			ds(CW_DS_HELD);
		} else {
			ds(CW_DS_HOLD_FULL);
		}
	}
	ds(CW_DS_EVENTS);
	if (bpf_ringbuf_output(&rb_discover, &ev, sizeof(ev), 0))
		ds(CW_DS_RING_DROPPED);
	return 0;
}

/* Attached by the loader to _dl_debug_state of every dynamic loader. */
SEC("uprobe")
int cw_loader_state(struct pt_regs *ctx)
{
	return report(CW_DISC_LOAD, 0, 1);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(cw_exec_loader, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return report(CW_DISC_EXEC, 1, 1);
}

/* The same events without the VMA iterator (before 6.7). */
SEC("uprobe")
int cw_loader_state_maps(struct pt_regs *ctx)
{
	return report(CW_DISC_LOAD, 0, 0);
}

SEC("raw_tp/sched_process_exec")
int cw_exec_loader_maps(void *ctx)
{
	return report(CW_DISC_EXEC, 1, 0);
}
