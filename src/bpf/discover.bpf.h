/* discover.bpf.h: what discover.bpf.c (library loads and execs, seen as
 * they happen) shares with its loader (src/loader/live_discover.c).
 *
 * The dynamic loader calls _dl_debug_state() (the r_brk of struct r_debug
 * that debuggers break on) after it has mapped new objects: once at start
 * with every DT_NEEDED library mapped, and once per dlopen, in both cases
 * before their relocation, constructors or any call into them (glibc
 * elf/rtld.c dl_main, elf/dl-open.c dl_open_worker_begin; since glibc 2.0).
 * A uprobe there walks the process's executable file mappings; a libcudart,
 * libcuda or libnccl file that userspace has not attached yet stops the
 * process (SIGSTOP from BPF) and is reported, and userspace attaches and
 * resumes it with SIGCONT. sched_process_exec does the same for the new
 * image's dynamic loader, so a container's own ld.so gets the hook before
 * it runs.
 *
 * Plain C below so userspace can include it. */
#ifndef CW_DISCOVER_BPF_H
#define CW_DISCOVER_BPF_H

#if defined(__bpf__)
#include "vmlinux.h"
#else
#include <linux/types.h>
#endif

/* A file as the kernel names it: the superblock's dev_t in the kernel's
 * encoding (major << 20 | minor, as /proc/PID/maps prints it) and the
 * inode number. */
struct cw_disc_file {
	__u64 dev;
	__u64 ino;
};

/* Values of the seen map: what userspace made of a file. A file in the
 * map never stops a process again. */
enum cw_disc_seen {
	CW_DISC_SEEN_HOOKED = 1, /* a CUDA/NCCL copy, attached (or tried) */
	CW_DISC_SEEN_LOADER = 2, /* a dynamic loader, _dl_debug_state hooked (or tried) */
};

enum cw_disc_kind {
	CW_DISC_LOAD = 1, /* _dl_debug_state: new CUDA/NCCL copies mapped */
	CW_DISC_EXEC = 2, /* exec: the new image's loader is not hooked */
};

#define CW_DISC_MAX_FILES 4

/* One ring record per event that found unseen files. */
struct cw_disc_event {
	__u64 ts_ns;  /* bpf_ktime_get_ns() at the event */
	__u32 pid;    /* tgid */
	__u32 tid;
	__u32 kind;   /* enum cw_disc_kind */
	__u32 held;   /* 1: the process was sent SIGSTOP and waits for SIGCONT */
	__u32 nfiles; /* files[] used */
	__u32 more;   /* 1: more unseen files than files[] holds */
	struct cw_disc_file files[CW_DISC_MAX_FILES];
};
_Static_assert(sizeof(struct cw_disc_event) == 96, "cw_disc_event size");

/* A stopped process in the held map, keyed by tgid. */
struct cw_disc_hold {
	__u64 ts_ns;
	__u32 tid;
	__u32 kind;
};

/* Counters (per-CPU array disc_stats). */
enum cw_disc_stat {
	CW_DS_LOADS = 0,     /* _dl_debug_state hits in scope */
	CW_DS_EXECS,         /* execs in scope */
	CW_DS_EVENTS,        /* records emitted (unseen files found) */
	CW_DS_HELD,          /* processes stopped */
	CW_DS_HOLD_FULL,     /* not stopped: the held map was full */
	CW_DS_RING_DROPPED,  /* records lost (ring full); a held process is
			      * found by userspace's sweep of the held map */
	CW_DS_MAX = 8
};

#endif
