/* kernel_features: the optional kernel features trace chooses between,
 * in one table that `check`, trace and docs/kernels.md share. Each row
 * says what the feature gives, the first mainline kernel with it, and what
 * trace does without it and what that costs. Every feature is probed on
 * the running kernel before anything is loaded (its BTF, or a two-
 * instruction program or a link that is closed at once), so trace switches
 * programs off instead of learning from a failed load. */
#ifndef CW_LOADER_KERNEL_FEATURES_H
#define CW_LOADER_KERNEL_FEATURES_H

#include "loader/probe_features.h"

enum cw_kfeature {
	CW_KF_TP_BTF,           /* tp_btf programs on sched_switch */
	CW_KF_TASK_BTF,         /* bpf_get_current_task_btf() */
	CW_KF_ATTACH_COOKIE,    /* bpf_get_attach_cookie() in uprobes */
	CW_KF_BPF_LOOP,         /* bpf_loop() */
	CW_KF_SWITCH_STATE,     /* sched_switch passes prev_state */
	CW_KF_SLEEPABLE_UPROBE, /* sleepable uprobe programs */
	CW_KF_SOCK_LENGTH,      /* sock:sock_send_length / sock_recv_length */
	CW_KF_BLOCK_IO_START,   /* block:block_io_start */
	CW_KF_UPROBE_MULTI,     /* uprobe_multi links */
	CW_KF_VMA_ITER,         /* task VMA iterator kfuncs */
	CW_KF_UPROBE_SESSION,   /* uprobe session links */
	CW_KF_SESSION_CTX,      /* the session kfuncs take the context */
	CW_KF_N
};

struct cw_kfeature_def {
	const char *key;     /* stable name: check --json, docs/kernels.md */
	const char *since;   /* first mainline kernel with it */
	const char *what;    /* what it is */
	const char *without; /* what trace does without it, and the cost */
};

extern const struct cw_kfeature_def cw_kfeature_defs[CW_KF_N];

struct cw_kfeatures {
	enum cw_tri has[CW_KF_N];
	int probe_errno; /* errno of a probe that could not tell */
};

/* Probes every feature on the running kernel. Never fails: what cannot be
 * told (no privilege) is CW_UNKNOWN. Quiet: libbpf's complaints about a
 * probe that says no are not shown. */
void cw_kfeatures_probe(struct cw_kfeatures *kf);

/* The running kernel's features, probed once per process. */
const struct cw_kfeatures *cw_kfeatures(void);

/* 1 when feature f is there (CW_YES). */
int cw_kfeature_has(enum cw_kfeature f);

/* Why the CUDA probes cannot load on this kernel: the first feature they
 * need and the kernel lacks, or -1 when they can. */
int cw_kfeatures_cuda_blocker(const struct cw_kfeatures *kf);

#endif
