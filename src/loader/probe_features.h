/* probe_features: what this host offers trace, measured rather than
 * assumed (the retsnoop approach: calibrate at start-up). Used by `check`
 * and by trace to choose tp_btf or raw_tp before loading.
 *
 * Every probe is read-only or loads a two-instruction BPF program that is
 * closed at once; nothing is attached. */
#ifndef CW_LOADER_PROBE_FEATURES_H
#define CW_LOADER_PROBE_FEATURES_H

#include <stddef.h>

/* A probe's answer: yes, no, or could not tell (usually no privilege). */
enum cw_tri {
	CW_NO = 0,
	CW_YES = 1,
	CW_UNKNOWN = -1,
};

struct cw_features {
	char kernel_release[128]; /* uname -r */
	int kernel_major, kernel_minor;
	int btf;                  /* /sys/kernel/btf/vmlinux readable */
	int euid;
	int cap_bpf, cap_perfmon, cap_sys_admin, cap_syslog; /* effective set */
	char tracefs[128];        /* mount point of a tracefs, "" when none */
	int tracefs_dir;          /* /sys/kernel/tracing exists (mountable) */
	enum cw_tri prog_kprobe;  /* BPF_PROG_TYPE_KPROBE: what uprobes load as */
	enum cw_tri prog_tracing; /* BPF_PROG_TYPE_TRACING: tp_btf, fentry */
	enum cw_tri prog_raw_tp;  /* BPF_PROG_TYPE_RAW_TRACEPOINT: the fallback */
	enum cw_tri map_ringbuf;  /* BPF_MAP_TYPE_RINGBUF (5.8+) */
	enum cw_tri tp_btf_sched_switch; /* a tp_btf program for sched_switch loads */
	int uprobe_pmu;           /* /sys/bus/event_source/devices/uprobe */
	int gpu_dev;              /* /dev/nvidia0 */
	char nvidia_driver[64];   /* from /proc/driver/nvidia/version, "" none */
	int probe_errno;          /* errno of the BPF probes when UNKNOWN */
};

/* Fills f. Never fails: what cannot be determined is CW_UNKNOWN/0. */
void cw_features_probe(struct cw_features *f);

/* Whether the credentials suffice to load and attach BPF programs:
 * root, or CAP_BPF + CAP_PERFMON (Linux 5.8+), or CAP_SYS_ADMIN. */
int cw_features_privileged(const struct cw_features *f);

/* 1 when this process may load and attach probes: root, or CAP_BPF and
 * CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN in its effective set, as the
 * systemd unit and the DaemonSet in deploy/ grant instead of full root. */
int cw_may_trace(void);

#endif
