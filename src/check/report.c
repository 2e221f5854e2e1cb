/* The host report behind `causeway check` and the MCP check tool: what
 * this host supports and what trace would attach to. The measuring is in
 * loader/probe_features.c (kernel, privileges, BPF) and loader/libfind.c
 * (libraries and Pythons on disk); this file turns the answers into
 * ok/warn/fail items with a recommendation each. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/report.h"
#include "check/report_int.h"
#include "config/config.h"
#include "gpu/kmsg.h"
#include "gpu/nvml.h"
#include "loader/discover.h"
#include "loader/libfind.h"
#include "loader/probe_features.h"
#include "loader/uprobe_attach.h"
#include "util/fileset.h"
#include "util/utf8.h"

#define ST_OK CW_CHECK_OK
#define ST_WARN CW_CHECK_WARN
#define ST_FAIL CW_CHECK_FAIL
#define item cw_check_item
static const char *const status_name[] = { "ok", "warn", "fail" };

void cw_check_item(struct cw_check_report *r, const char *name, enum cw_check_status st, const char *fix,
		   const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	o = json_pack("{s:s, s:s, s:s}", "name", name, "status", status_name[st], "detail", detail);
	if (o && st != ST_OK && fix)
		json_object_set_new(o, "recommendation", cw_json_str(fix));
	json_array_append_new(r->checks, o);
	if ((int)st > r->worst)
		r->worst = st;
}

const char *cw_check_tri_name(enum cw_tri t)
{
	return t == CW_YES ? "yes" : t == CW_NO ? "no" : "unknown";
}

static void check_kernel(struct cw_check_report *r, const struct cw_features *f)
{
	/* BPF ring buffers (5.8) are the floor; tp_btf and CAP_BPF came in
	 * the same releases. */
	int new_enough = f->kernel_major > 5 || (f->kernel_major == 5 && f->kernel_minor >= 8);

	item(r, "kernel", new_enough ? ST_OK : ST_FAIL, "run on Linux 5.8 or newer (BPF ring buffers)",
	     "Linux %s", f->kernel_release[0] ? f->kernel_release : "unknown");
	item(r, "btf", f->btf ? ST_OK : ST_FAIL,
	     "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels are)",
	     f->btf ? "/sys/kernel/btf/vmlinux present" : "/sys/kernel/btf/vmlinux missing");
}

/* main.c already refused a bad file; this says which one applies. */
static void check_config(struct cw_check_report *r, const struct cw_check_env *env)
{
	const struct cw_config *c = NULL;
	char err[512];

	if (cw_config_get(&c, err, sizeof(err)))
		item(r, "config", ST_FAIL, "fix the file, or name another with --config", "%s", err);
	else if (c->source)
		item(r, "config", ST_OK, NULL, "%s (node %s, store %s)", c->source, env->node, env->store);
	else
		item(r, "config", ST_OK, NULL, "no config file (%s, ~/%s): defaults (node %s, store %s)",
		     CW_CONFIG_SYSTEM_PATH, CW_CONFIG_USER_PATH, env->node, env->store);
}

static void check_privileges(struct cw_check_report *r, const struct cw_features *f)
{
	if (f->euid == 0)
		item(r, "privileges", ST_OK, NULL, "running as root");
	else if (cw_features_privileged(f))
		item(r, "privileges", ST_OK, NULL, "euid %d with %s", f->euid,
		     f->cap_sys_admin ? "CAP_SYS_ADMIN" : "CAP_BPF and CAP_PERFMON");
	else
		item(r, "privileges", ST_FAIL,
		     "run trace as root, or grant the binary CAP_BPF and CAP_PERFMON: "
		     "sudo setcap cap_bpf,cap_perfmon+ep $(command -v causeway)",
		     "euid %d without CAP_BPF+CAP_PERFMON (bpf %s, perfmon %s)", f->euid,
		     f->cap_bpf ? "yes" : "no", f->cap_perfmon ? "yes" : "no");
}

static void check_tracefs(struct cw_check_report *r, const struct cw_features *f)
{
	/* tp_btf and the uprobe PMU need no tracefs; the classic-tracepoint
	 * and legacy-uprobe fallbacks do. */
	if (f->tracefs[0])
		item(r, "tracefs", ST_OK, NULL, "mounted at %s", f->tracefs);
	else
		item(r, "tracefs", ST_WARN, "mount -t tracefs tracefs /sys/kernel/tracing",
		     "not mounted%s; needed only by the classic-tracepoint fallback",
		     f->tracefs_dir ? " (/sys/kernel/tracing exists)" : "");
}

static void check_bpf(struct cw_check_report *r, const struct cw_features *f)
{
	const char *priv_fix = "run check as root (or with CAP_BPF and CAP_PERFMON) to probe BPF features";
	/* Without the capabilities the kernel refuses every load, and
	 * libbpf's probes read that refusal as "not supported": the answer
	 * says nothing about the kernel, so the advice is privileges. */
	int privileged = f->euid == 0 || f->cap_sys_admin || (f->cap_bpf && f->cap_perfmon);

	if (!privileged && (f->prog_kprobe != CW_YES || f->map_ringbuf != CW_YES)) {
		item(r, "bpf", ST_WARN, priv_fix, "not probed: euid %d lacks CAP_BPF and CAP_PERFMON", f->euid);
	} else if (f->prog_kprobe == CW_UNKNOWN || f->map_ringbuf == CW_UNKNOWN) {
		item(r, "bpf", ST_WARN, priv_fix, "cannot probe BPF program types: %s", strerror(f->probe_errno));
	} else {
		int ok = f->prog_kprobe == CW_YES && f->map_ringbuf == CW_YES;

		item(r, "bpf", ok ? ST_OK : ST_FAIL,
		     "use a kernel with CONFIG_BPF_SYSCALL, CONFIG_UPROBE_EVENTS and BPF ring buffers (5.8+)",
		     "kprobe/uprobe programs %s, tracing programs %s, raw tracepoints %s, ring buffer %s",
		     cw_check_tri_name(f->prog_kprobe), cw_check_tri_name(f->prog_tracing),
		     cw_check_tri_name(f->prog_raw_tp), cw_check_tri_name(f->map_ringbuf));
	}
	if (f->tp_btf_sched_switch == CW_YES)
		item(r, "tp_btf", ST_OK, NULL, "tp_btf/sched_switch loads");
	else if (f->tp_btf_sched_switch == CW_UNKNOWN || !privileged)
		item(r, "tp_btf", ST_WARN, priv_fix, "not probed: %s", strerror(f->probe_errno));
	else
		item(r, "tp_btf", f->prog_raw_tp == CW_YES ? ST_WARN : ST_FAIL,
		     "trace falls back to raw tracepoints; a kernel with BTF and BPF trampolines (5.5+) avoids it",
		     "tp_btf/sched_switch does not load");
	if (f->uprobe_pmu)
		item(r, "uprobes", ST_OK, NULL, "uprobe PMU at /sys/bus/event_source/devices/uprobe");
	else
		item(r, "uprobes", f->tracefs[0] ? ST_WARN : ST_FAIL,
		     "enable CONFIG_UPROBE_EVENTS, or mount tracefs for the legacy uprobe_events interface",
		     "no uprobe PMU%s", f->tracefs[0] ? "; legacy uprobe_events via tracefs" : "");
}

/* ---- libraries ---- */

struct lib_seen {
	struct cw_check_report *r;
	int found[CW_LIB_NKINDS], hooked[CW_LIB_NKINDS], real[CW_LIB_NKINDS];
	char example[CW_LIB_NKINDS][PATH_MAX + 512];
	struct cw_fileset listed; /* library files listed, by identity */
	int mapped_copies;  /* copies only running processes map (containers, private wheels) */
	int mapping_pids;   /* processes that map a hooked library */
	uint32_t last_pid;
};

static int on_lib(void *ctx, const struct cw_found_lib *lib)
{
	struct lib_seen *s = ctx;
	int total = 0, n = cw_hooks_in_file(lib->real, &total);
	json_t *o;

	if (n < 0)
		n = 0;
	cw_fileset_add(&s->listed, lib->dev, lib->ino);
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:b}", "kind", cw_lib_kind_name(lib->kind), "path",
		      lib->path, "real_path", lib->real, "version", lib->version, "soname", lib->soname,
		      "hooked_symbols", n, "hooks_for_kind", cw_hooks_count(lib->kind), "stub", lib->stub);
	if (o && lib->detail[0])
		json_object_set_new(o, "version_detail", cw_json_str(lib->detail));
	json_array_append_new(s->r->libs, o);
	s->found[lib->kind]++;
	if (n > 0)
		s->hooked[lib->kind]++;
	/* The first real (non-stub) library with hooks is the one shown. */
	if (n > 0 && (!s->example[lib->kind][0] || (!lib->stub && !s->real[lib->kind]))) {
		char ver[256] = "";

		if (lib->version[0] && lib->detail[0])
			snprintf(ver, sizeof(ver), " (version %s; %s)", lib->version, lib->detail);
		else if (lib->version[0] || lib->detail[0])
			snprintf(ver, sizeof(ver), " (%s%s)", lib->version[0] ? "version " : "",
				 lib->version[0] ? lib->version : lib->detail);
		snprintf(s->example[lib->kind], sizeof(s->example[0]), "%s%s, %d hooked symbols%s", lib->real, ver, n,
			 lib->stub ? ", link-time stub" : "");
	}
	if (!lib->stub)
		s->real[lib->kind]++;
	return 0;
}

/* A copy a running process maps, as trace would attach it: those already
 * found on disk are not listed twice; the others (a container's copy
 * through /proc/PID/root, a wheel outside the searched places) are, with
 * the process that maps them. */
static int on_mapped(void *ctx, const struct cw_lib_copy *lib)
{
	struct lib_seen *s = ctx;
	int total = 0, n;
	json_t *o;

	if (lib->pid != s->last_pid) {
		s->mapping_pids++;
		s->last_pid = lib->pid;
	}
	if (!cw_fileset_add(&s->listed, lib->dev, lib->ino))
		return 0;
	n = cw_hooks_in_file(lib->path, &total);
	if (n < 0)
		n = 0;
	o = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i}", "kind", cw_lib_kind_name(lib->kind), "path", lib->path,
		      "mapped_path", lib->mapped, "pid", (int)lib->pid, "hooked_symbols", n, "hooks_for_kind",
		      cw_hooks_count(lib->kind));
	json_array_append_new(s->r->libs, o);
	s->found[lib->kind]++;
	s->mapped_copies++;
	if (n > 0) {
		s->hooked[lib->kind]++;
		s->real[lib->kind]++;
		if (!s->example[lib->kind][0])
			snprintf(s->example[lib->kind], sizeof(s->example[0]), "%s (mapped by pid %u), %d hooked symbols",
				 lib->path, lib->pid, n);
	}
	return 0;
}

static void check_libs(struct cw_check_report *r)
{
	static const char *const label[CW_LIB_NKINDS] = { "cuda runtime", "cuda driver", "nccl" };
	static const char *const fix[CW_LIB_NKINDS] = {
		"install the CUDA toolkit or a CUDA-enabled PyTorch wheel (libcudart), or point trace at it with --cuda-lib",
		"install the NVIDIA driver (libcuda.so.1); the toolkit's stubs/libcuda.so only links",
		"install NCCL (libnccl2, or the nvidia-nccl wheel) to trace collectives",
	};
	struct lib_seen s;
	int k;

	memset(&s, 0, sizeof(s));
	s.r = r;
	cw_libfind_cuda(NULL, on_lib, &s);
	cw_discover_all(on_mapped, &s);
	for (k = 0; k < CW_LIB_NKINDS; k++) {
		if (!s.found[k])
			item(r, label[k], ST_WARN, fix[k], "lib%s not found", cw_lib_kind_name(k));
		else if (!s.hooked[k])
			item(r, label[k], ST_WARN, fix[k], "%d file(s) found, none exports a hooked symbol", s.found[k]);
		else if (k == CW_LIB_CUDA && !s.real[k])
			/* A stub exports the symbols (so uprobes attach) but no
			 * process loads it at run time. */
			item(r, label[k], ST_WARN, fix[k], "only the stub: %s", s.example[k]);
		else
			item(r, label[k], ST_OK, NULL, "%s", s.example[k]);
	}
	if (!s.mapping_pids)
		item(r, "cuda processes", ST_OK, NULL,
		     "none running; trace attaches to the copies processes map when they start");
	else
		item(r, "cuda processes", ST_OK, NULL, "%d running process(es) map a hooked library; %d copy(ies) only they map",
		     s.mapping_pids, s.mapped_copies);
}

/* ---- CPython ---- */

struct py_seen {
	struct cw_check_report *r;
	int supported, found;
	char list[512];
};

/* src/pyframe reads frames of 3.10-3.12 from built-in tables and 3.13+
 * from _Py_DebugOffsets. */
static int py_supported(const struct cw_python_install *py)
{
	return py->major == 3 && py->minor >= 10;
}

static int on_python(void *ctx, const struct cw_python_install *py)
{
	struct py_seen *s = ctx;
	int ok = py_supported(py) && py->exports_runtime;
	size_t l = strlen(s->list);

	json_array_append_new(s->r->pythons,
			      json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "version", py->version, "path", py->path,
					"executable", py->exe, "build", py->shared ? "shared" : "static",
					"exports_runtime", py->exports_runtime, "supported", ok));
	s->found++;
	if (ok) {
		s->supported++;
		snprintf(s->list + l, sizeof(s->list) - l, "%s%s (%s)", l ? ", " : "", py->version,
			 py->shared ? "shared" : "static");
	}
	return 0;
}

static void check_python(struct cw_check_report *r)
{
	struct py_seen s;

	memset(&s, 0, sizeof(s));
	s.r = r;
	cw_libfind_python(NULL, NULL, on_python, &s);
	if (s.supported)
		item(r, "python", ST_OK, NULL, "%d of %d CPython installs give line attribution: %s", s.supported,
		     s.found, s.list);
	else
		item(r, "python", ST_WARN,
		     "install CPython 3.10 or newer (pyenv or the distribution's python3) for Python line attribution",
		     s.found ? "%d CPython install(s), none 3.10+ with _PyRuntime exported" : "no CPython found",
		     s.found);
}

static void check_gpu(struct cw_check_report *r, const struct cw_features *f)
{
	if (f->gpu_dev && f->nvidia_driver[0])
		item(r, "gpu", ST_OK, NULL, "/dev/nvidia0, NVIDIA driver %s", f->nvidia_driver);
	else if (f->gpu_dev || f->nvidia_driver[0])
		item(r, "gpu", ST_WARN, "load the nvidia kernel module (modprobe nvidia) and check nvidia-smi",
		     "%s", f->gpu_dev ? "/dev/nvidia0 present but no /proc/driver/nvidia/version"
				      : "NVIDIA driver loaded but no /dev/nvidia0");
	else
		item(r, "gpu", ST_WARN,
		     "none needed to trace: CUDA calls are traced either way; on a GPU host load the NVIDIA driver",
		     "no NVIDIA GPU (/dev/nvidia0 and /proc/driver/nvidia/version absent)");
}

/* NVML through the same dlopen path trace's sampler uses ($CW_NVML_LIB or
 * libnvidia-ml.so.1): found, driver version, devices; or "no GPU
 * telemetry" and why. Not a failure: tracing works without it. */
static void check_gpu_telemetry(struct cw_check_report *r, const char *nvml_lib)
{
	struct cw_nvml *n = NULL;
	char why[256], list[400] = "";
	size_t used = 0;
	int rc = cw_nvml_open(&n, nvml_lib, why, sizeof(why));

	if (rc) {
		item(r, "gpu telemetry", ST_WARN,
		     "install the NVIDIA driver (libnvidia-ml.so.1) for device telemetry and Xid faults; CUDA calls are traced either way",
		     "no GPU telemetry: %s", why);
		return;
	}
	for (int i = 0; i < cw_nvml_count(n); i++) {
		const struct cw_gpu_device *d = cw_nvml_device(n, i);
		json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:I, s:b}", "index", d->index, "uuid", d->uuid, "pci_bus_id",
				      d->pci, "name", d->name, "memory_total", (json_int_t)d->mem_total, "mig", d->mig);
		if (o && d->parent >= 0)
			json_object_set_new(o, "parent", json_integer(d->parent));
		json_array_append_new(r->gpus, o);
		if (used < sizeof(list) - 1) {
			int w = snprintf(list + used, sizeof(list) - used, "%s%d: %s (%s)", i ? "; " : "", i, d->name,
					 d->pci);
			if (w > 0)
				used += (size_t)w;
		}
	}
	if (cw_nvml_count(n))
		item(r, "gpu telemetry", ST_OK, NULL, "NVML %s, driver %s, %d device(s): %s", cw_nvml_path(n),
		     cw_nvml_driver(n)[0] ? cw_nvml_driver(n) : "unknown", cw_nvml_count(n), list);
	else
		item(r, "gpu telemetry", ST_WARN, "check nvidia-smi: the driver sees no device",
		     "NVML %s, driver %s, no devices", cw_nvml_path(n), cw_nvml_driver(n));
	cw_nvml_close(n);
}

/* The Xid source trace reads: the kernel log opened exactly as the sampler
 * opens it. The errno says which grant is missing: the node (a container
 * without the host's /dev/kmsg), CAP_SYSLOG (kernel.dmesg_restrict), or
 * the device cgroup (an unprivileged container's runtime allows only the
 * standard devices). Not a failure: tracing works without it. */
static void check_kmsg(struct cw_check_report *r, const struct cw_features *f)
{
	int fd = cw_kmsg_open(NULL);
	int restricted = cw_kmsg_restricted();

	if (fd >= 0) {
		close(fd);
		item(r, "xid faults", ST_OK, NULL, "kernel log %s readable: Xid faults from the driver's NVRM lines",
		     CW_KMSG_PATH);
	} else if (fd == -ENOENT)
		item(r, "xid faults", ST_WARN,
		     "mount the host's /dev/kmsg (Kubernetes: a hostPath volume of type CharDevice; docs/deploy.md, \"Kernel log\")",
		     "no Xid faults from the kernel log: %s absent", CW_KMSG_PATH);
	else if ((fd == -EPERM || fd == -EACCES) && restricted == 1 && !f->cap_syslog)
		item(r, "xid faults", ST_WARN, "grant CAP_SYSLOG (kernel.dmesg_restrict is 1)",
		     "no Xid faults from the kernel log: %s: %s without CAP_SYSLOG", CW_KMSG_PATH, strerror(-fd));
	else if (fd == -EPERM)
		item(r, "xid faults", ST_WARN,
		     "in a container, allow the device (a device plugin, or privileged: the chart's kmsg.privileged; docs/deploy.md, \"Kernel log\")",
		     "no Xid faults from the kernel log: %s: %s, refused by the device cgroup (%s)", CW_KMSG_PATH,
		     strerror(-fd), f->cap_syslog ? "CAP_SYSLOG present" : "kernel.dmesg_restrict is 0");
	else
		item(r, "xid faults", ST_WARN, "check the permissions of /dev/kmsg",
		     "no Xid faults from the kernel log: %s: %s", CW_KMSG_PATH, strerror(-fd));
}

int cw_check_report(const struct cw_check_env *env, json_t **out)
{
	struct cw_check_report r = { 0 };
	struct cw_features f;
	int rc;

	*out = NULL;
	r.checks = json_array();
	r.libs = json_array();
	r.pythons = json_array();
	r.gpus = json_array();
	r.features = json_object();
	r.programs = json_array();
	if (!r.checks || !r.libs || !r.pythons || !r.gpus || !r.features || !r.programs) {
		json_decref(r.checks);
		json_decref(r.libs);
		json_decref(r.pythons);
		json_decref(r.gpus);
		json_decref(r.features);
		json_decref(r.programs);
		return -ENOMEM;
	}
	cw_features_probe(&f);
	check_kernel(&r, &f);
	check_privileges(&r, &f);
	check_tracefs(&r, &f);
	check_bpf(&r, &f);
	cw_check_kernel_features(&r, cw_features_privileged(&f));
	if (cw_features_privileged(&f) && f.btf && env->load)
		cw_check_load(&r);
	check_libs(&r);
	check_python(&r);
	check_gpu(&r, &f);
	check_gpu_telemetry(&r, env->nvml_lib);
	check_kmsg(&r, &f);
	check_config(&r, env);
	rc = r.worst == ST_FAIL ? env->fail_exit : 0;
	*out = json_pack("{s:b, s:i, s:o, s:o, s:o, s:o, s:o, s:o}", "ok", rc == 0, "exit", rc, "checks", r.checks,
			 "libraries", r.libs, "python", r.pythons, "gpus", r.gpus, "kernel_features", r.features,
			 "bpf_programs", r.programs);
	return *out ? 0 : -ENOMEM;
}
