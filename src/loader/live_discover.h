/* live_discover: library copies attached as processes load them, not at the
 * next /proc rescan (bpf/discover.bpf.h says what the kernel side does).
 *
 * A uprobe on every dynamic loader's _dl_debug_state and the exec
 * tracepoint report a process that has just mapped a libcudart, libcuda or
 * libnccl file not attached yet, or just exec'ed an image whose loader is
 * not hooked yet. With hold on, the BPF program stops that process
 * (SIGSTOP) before it runs on; a thread here attaches the copy (through
 * the attach callback) or hooks the loader, then resumes it (SIGCONT).
 *
 * Nothing is left stopped: every stop is first written to a map (tgid ->
 * when); the thread resumes what it handled, sweeps the map for stops whose
 * record was lost, and a watchdog process, which shares only that map and a
 * pipe with the agent, resumes whatever is still in it when the agent dies
 * (the pipe reads end-of-file, whatever killed the agent). */
#ifndef CW_LOADER_LIVE_DISCOVER_H
#define CW_LOADER_LIVE_DISCOVER_H

#include <stddef.h>
#include <stdint.h>

#include "loader/discover.h"

struct cw_live_discover;

/* Called on the discovery thread for each hooked copy the process maps.
 * Returns what cw_cuda_probes_attach() returned: > 0 attached now, 0 was
 * attached before, < 0 failed. */
typedef int (*cw_live_attach_fn)(void *ctx, const struct cw_lib_copy *lib);

struct cw_live_opts {
	int filter_tracked;             /* only processes in the tracked set */
	int hold;                       /* stop a loading process until attached */
	int tracked_fd, drops_fd, stats_fd; /* shared maps (kernel_probes), -1: own */
	cw_live_attach_fn attach;
	void *ctx;
};

/* Loads the programs (attaches nothing yet). Returns 0, or -errno with err
 * filled; -EOPNOTSUPP when the kernel lacks what they need (the VMA
 * iterator, Linux 6.7): trace then relies on its rescan alone. */
int cw_live_open(struct cw_live_discover **out, const struct cw_live_opts *o, char *err, size_t errlen);

/* The loaded object (loader/prog_report.h lists its programs). */
struct bpf_object *cw_live_object(struct cw_live_discover *ld);

/* Marks a file as handled so no process is stopped for it: by path
 * (stat), or by kernel device (cw_kdev) and inode. */
void cw_live_mark_path(struct cw_live_discover *ld, const char *path);
void cw_live_mark(struct cw_live_discover *ld, uint64_t kdev, uint64_t ino);

/* Hooks the standard loaders, attaches the exec program, starts the
 * watchdog and the thread. Returns 0 or -errno with err filled. */
int cw_live_start(struct cw_live_discover *ld, char *err, size_t errlen);

/* Whether pid is stopped by discovery right now. */
int cw_live_is_held(struct cw_live_discover *ld, uint32_t pid);

struct cw_live_stats {
	uint64_t loads, execs;   /* loader events and execs in scope (kernel) */
	uint64_t events;         /* reports of unseen files */
	uint64_t held;           /* processes stopped */
	uint64_t hold_full;      /* not stopped: held map full */
	uint64_t ring_dropped;   /* reports lost; their stops found by the sweep */
	uint64_t swept;          /* stops resumed by the sweep */
	uint64_t attached;       /* copies attached by discovery */
	uint64_t late;           /* copies attached while their process ran on */
	uint64_t loaders;        /* loaders hooked */
	uint64_t lat_p50_us, lat_max_us; /* event -> attached and resumed */
	uint64_t lat_n;          /* latencies measured */
};
void cw_live_get_stats(struct cw_live_discover *ld, struct cw_live_stats *s);

/* Detaches, stops the thread, resumes every process still stopped, and
 * ends the watchdog; the final figures go to last when it is not NULL.
 * NULL ld is fine. */
void cw_live_close(struct cw_live_discover *ld, struct cw_live_stats *last);

#endif
