#include "loader/probe_features.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Older uapi headers lack these (CAP_BPF/CAP_PERFMON: Linux 5.8). */
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static void read_caps(struct cw_features *f)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) != 0)
		return;
#define HAS(cap) ((data[(cap) / 32].effective >> ((cap) % 32)) & 1u)
	f->cap_bpf = HAS(CAP_BPF);
	f->cap_perfmon = HAS(CAP_PERFMON);
	f->cap_sys_admin = HAS(CAP_SYS_ADMIN);
	f->cap_syslog = HAS(CAP_SYSLOG);
#undef HAS
}

int cw_may_trace(void)
{
	struct cw_features f;

	if (geteuid() == 0)
		return 1;
	memset(&f, 0, sizeof(f));
	read_caps(&f);
	return (f.cap_bpf && f.cap_perfmon) || f.cap_sys_admin;
}

static void find_tracefs(struct cw_features *f)
{
	struct mntent *m;
	FILE *mt = setmntent("/proc/self/mounts", "r");

	if (!mt)
		return;
	while ((m = getmntent(mt))) {
		if (strcmp(m->mnt_type, "tracefs") != 0)
			continue;
		/* Prefer the canonical mount over debugfs's nested one. */
		if (!f->tracefs[0] || !strcmp(m->mnt_dir, "/sys/kernel/tracing"))
			snprintf(f->tracefs, sizeof(f->tracefs), "%s", m->mnt_dir);
	}
	endmntent(mt);
}

static enum cw_tri tri(int rc, struct cw_features *f)
{
	if (rc == 1)
		return CW_YES;
	if (rc == 0)
		return CW_NO;
	/* EPERM/EACCES: not allowed to ask; anything else: could not tell. */
	f->probe_errno = -rc;
	return CW_UNKNOWN;
}

/* Loads "r0 = 0; exit" as a tp_btf program on sched_switch: the exact
 * shape kernel_probes uses first, so its fallback decision and this one
 * agree. */
static enum cw_tri probe_tp_btf(struct cw_features *f)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP);
	int id, fd;

	if (!f->btf)
		return CW_NO;
	id = libbpf_find_vmlinux_btf_id("sched_switch", BPF_TRACE_RAW_TP);
	if (id < 0)
		return CW_NO;
	opts.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "cw_probe", "GPL", insns, 2, &opts);
	if (fd >= 0) {
		close(fd);
		return CW_YES;
	}
	if (errno == EPERM || errno == EACCES) {
		f->probe_errno = errno;
		return CW_UNKNOWN;
	}
	return CW_NO;
}

/* Parses "/proc/driver/nvidia/version" text for the kernel module's
 * version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06 ...").
 * Returns 0 or -ENOENT. */
static int cw_parse_nvidia_version(const char *text, char *buf, size_t len)
{
	const char *p = strstr(text, "Kernel Module");
	size_t i = 0;

	if (!p || !len)
		return -ENOENT;
	p += strlen("Kernel Module");
	/* Some builds say "Kernel Module for aarch64" or "Open Kernel Module". */
	while (*p && !isdigit((unsigned char)*p) && *p != '\n')
		p++;
	while ((isdigit((unsigned char)p[i]) || p[i] == '.') && i + 1 < len) {
		buf[i] = p[i];
		i++;
	}
	buf[i] = '\0';
	return i ? 0 : -ENOENT;
}

static void probe_gpu(struct cw_features *f)
{
	char text[1024];
	FILE *fp;
	size_t n;

	f->gpu_dev = access("/dev/nvidia0", F_OK) == 0;
	fp = fopen("/proc/driver/nvidia/version", "re");
	if (!fp)
		return;
	n = fread(text, 1, sizeof(text) - 1, fp);
	fclose(fp);
	text[n] = '\0';
	cw_parse_nvidia_version(text, f->nvidia_driver, sizeof(f->nvidia_driver));
}

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

void cw_features_probe(struct cw_features *f)
{
	libbpf_print_fn_t old;
	struct utsname u;

	memset(f, 0, sizeof(*f));
	if (uname(&u) == 0) {
		snprintf(f->kernel_release, sizeof(f->kernel_release), "%s", u.release);
		sscanf(u.release, "%d.%d", &f->kernel_major, &f->kernel_minor);
	}
	f->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	f->euid = (int)geteuid();
	read_caps(f);
	find_tracefs(f);
	f->tracefs_dir = access("/sys/kernel/tracing", F_OK) == 0;
	f->uprobe_pmu = access("/sys/bus/event_source/devices/uprobe/type", R_OK) == 0;
	/* libbpf logs the verifier's complaints on stderr; a probe that says
	 * no is an answer here, not an error. */
	old = libbpf_set_print(silent_print);
	f->prog_kprobe = tri(libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL), f);
	f->prog_tracing = tri(libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACING, NULL), f);
	f->prog_raw_tp = tri(libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL), f);
	f->map_ringbuf = tri(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL), f);
	f->tp_btf_sched_switch = probe_tp_btf(f);
	/* libbpf 1.1's generic probe cannot load a TRACING program without
	 * an attach target and may answer no; a tp_btf program that loaded
	 * is the stronger evidence. */
	if (f->tp_btf_sched_switch == CW_YES)
		f->prog_tracing = CW_YES;
	libbpf_set_print(old);
	probe_gpu(f);
}

int cw_features_privileged(const struct cw_features *f)
{
	return f->euid == 0 || f->cap_sys_admin || (f->cap_bpf && f->cap_perfmon);
}
