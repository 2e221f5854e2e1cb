/* uprobe_attach: the CUDA-side BPF programs (cuda.bpf.c) and their
 * attachments to every hooked function of every library copy.
 * Which functions are hooked: loader/hook_table.h. The maps the programs
 * share with userspace (open calls, folds, aggregates) are read in
 * loader/cuda_maps.c. */
#ifndef CW_LOADER_UPROBE_ATTACH_H
#define CW_LOADER_UPROBE_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "bpf/cuda.bpf.h"
#include "loader/discover.h"
#include "loader/hook_table.h"

struct cw_cuda_probes;

struct cw_cuda_probes_opts {
	unsigned ring_kb;      /* the calls ring; 0 = 8192 */
	unsigned agg_pct;      /* aggregate above this ring fill %, 0 = never */
	int filter_tracked;    /* only tracked tgids (else every process) */
	int filter_cgroup;     /* only threads in cgroups added with cw_cuda_probes_allow_cgroup */
	int py_mode;           /* enum cw_py_mode (cuda.bpf.h); 0 = off */
	int native_stacks;     /* a native user stack after every call entry */
	int no_multi;          /* one perf-event uprobe per function, no uprobe_multi links */
	int no_session;        /* uprobe_multi entry and return pairs, no uprobe session links */
	int capture_summary;   /* fold fast calls in the kernel (cuda.bpf.h, fold_hist) */
	unsigned fold_sample;  /* keep 1 in this many foldable calls whole; 0 = 128 (a power of two) */
	unsigned fold_max;     /* entries of fold_slots and fold_hist together; 0 = CW_FOLD_SLOTS + CW_FOLD_MAX (tests fill a small one) */
	/* Shared maps from kernel_probes (-1: own copies). */
	int tracked_fd, drops_fd, stats_fd;
};

/* Opens and loads the programs. Returns 0, or -errno with err filled. */
int cw_cuda_probes_open(struct cw_cuda_probes **out, const struct cw_cuda_probes_opts *o, char *err,
			size_t errlen);
void cw_cuda_probes_close(struct cw_cuda_probes *cp);

/* The loaded object (loader/prog_report.h lists its programs). */
struct bpf_object *cw_cuda_probes_object(struct cw_cuda_probes *cp);

/* What attach found in one file. */
struct cw_attach_report {
	int symbols;   /* hooked symbols (variants included) the file exports */
	int attached;  /* entry+return pairs attached now */
	int failed;    /* attach errors (first in err) */
	int already;   /* the file (inode) was attached before */
	uint64_t ns;   /* time spent */
};

/* Attaches every hooked symbol of the file at path (any kind; the symbols
 * decide). Returns the pairs attached, 0 when the file was attached before,
 * -ENOENT when it exports no hooked symbol, -ENOEXEC when it is not ELF, or
 * another -errno. */
int cw_cuda_probes_attach(struct cw_cuda_probes *cp, const char *path, struct cw_attach_report *rep,
			  char *err, size_t errlen);

/* Lets calls of threads in cgroup v2 id through (filter_cgroup). Returns
 * 0 or -errno (-E2BIG when the map is full). */
int cw_cuda_probes_allow_cgroup(struct cw_cuda_probes *cp, uint64_t id);

/* Adds the calls ring to *rb (created when NULL). */
int cw_cuda_probes_add_ring(struct cw_cuda_probes *cp, struct ring_buffer **rb, ring_buffer_sample_fn fn,
			    void *ctx);

/* Counters summed over CPUs, indexed by enum cw_cuda_stat. */
int cw_cuda_probes_stats(struct cw_cuda_probes *cp, uint64_t out[CW_CS_MAX]);
/* Calls still open in the kernel (entered, not returned) that entered
 * before cutoff_mono_ns: each is removed from the probes' state and handed
 * to fn as a CW_REC_CALL_ENTRY record, so the pipeline stores it as an
 * unfinished call (a hung collective, a thread that exited mid-call).
 * Returns how many were handed over, or -errno. */
/* Reads (never removes) the calls of pid open in the kernel right now:
 * fn gets each entry. A thread stuck in a call that never returns (a hung
 * synchronize) is named by it. Returns how many were seen, or -errno. */
int cw_cuda_probes_peek_inflight(struct cw_cuda_probes *cp, uint32_t pid,
				 void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx);
int cw_cuda_probes_take_inflight(struct cw_cuda_probes *cp, uint64_t cutoff_mono_ns,
				 void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx);
/* Calls aggregated in the kernel for op, summed over CPUs. 0 or -errno. */
int cw_cuda_probes_agg(struct cw_cuda_probes *cp, unsigned op, struct cw_cuda_agg *out);

/* --capture summary: the monotonic -> wall offset folded calls are keyed
 * with, and per op (enum cw_op) the duration under which a call folds (0:
 * none folds). */
void cw_cuda_probes_fold_set(struct cw_cuda_probes *cp, int64_t mono_to_wall_ns, const uint64_t thresh[CW_OP_MAX]);
/* Hands fn each folded (pid, tid, op, second) whose second is at most
 * last_second and removes it from the kernel map. Returns how many, or
 * -errno. */
int cw_cuda_probes_fold_drain(struct cw_cuda_probes *cp, int64_t last_second,
			      void (*fn)(void *ctx, const struct cw_fold_key *k, const struct cw_fold_val *v),
			      void *ctx);

/* Totals: library copies and probe pairs attached. */
int cw_cuda_probes_nlibs(const struct cw_cuda_probes *cp);
int cw_cuda_probes_npairs(const struct cw_cuda_probes *cp);
/* How the probes are attached: "uprobe sessions", "uprobe_multi pairs"
 * or "perf-event uprobe pairs" (the kernel decides, or trace's
 * --no-uprobe-session and --no-uprobe-multi). */
const char *cw_cuda_probes_kind(const struct cw_cuda_probes *cp);

/* The maps of the Python stack capture (bpf/pystack.bpf.h), for
 * src/pyframe/pystack_loader. Returns 0 or -EBADF. */
int cw_cuda_probes_pystack_fds(struct cw_cuda_probes *cp, int *procs_fd, int *tstate_fd);

#endif
