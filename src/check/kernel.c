/* The kernel part of `causeway check`: each optional feature of
 * loader/kernel_features.c with what trace does without it, then the BPF
 * objects loaded (and unloaded at once) with the settings trace uses, so
 * "trace can run here" is said only when trace's own loads succeed here. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check/report_int.h"
#include "loader/kernel_features.h"
#include "loader/http_probes.h"
#include "loader/kernel_probes.h"
#include "loader/live_discover.h"
#include "loader/prog_report.h"
#include "loader/uprobe_attach.h"
#include "util/timeutil.h"
#include "util/utf8.h"

void cw_check_kernel_features(struct cw_check_report *r, int privileged)
{
	const struct cw_kfeatures *kf = cw_kfeatures();
	int blocker = cw_kfeatures_cuda_blocker(kf);

	for (int i = 0; i < CW_KF_N; i++) {
		const struct cw_kfeature_def *d = &cw_kfeature_defs[i];
		enum cw_tri has = kf->has[i];
		const char *name = d->key;

		json_object_set_new(r->features, d->key,
				    json_pack("{s:s, s:s, s:s, s:s}", "has", cw_check_tri_name(has), "since", d->since, "what",
					      d->what, "without", d->without));
		if (i == CW_KF_TP_BTF)
			continue; /* the tp_btf item above says it */
		if (i == CW_KF_SESSION_CTX) {
			/* not a fallback: which of two builds loads */
			cw_check_item(r, name, CW_CHECK_OK, NULL, "%s: %s", d->what, cw_check_tri_name(has));
		} else if (has == CW_YES) {
			cw_check_item(r, name, CW_CHECK_OK, NULL, "%s (Linux %s)", d->what, d->since);
		} else if (has == CW_UNKNOWN || !privileged) {
			cw_check_item(r, name, CW_CHECK_WARN, "run check as root to probe the kernel's BPF features",
				      "not probed: %s", strerror(kf->probe_errno ? kf->probe_errno : EPERM));
		} else {
			cw_check_item(r, name, i == blocker ? CW_CHECK_FAIL : CW_CHECK_WARN,
				      i == blocker ? "a kernel of Linux 5.17 or later (or one with these BPF features "
						     "backported, as RHEL 9's) traces CUDA calls"
						   : NULL,
				      "no %s (Linux %s): %s", d->what, d->since, d->without);
		}
	}
}

struct prog_list {
	json_t *programs;
	const char *object;
	char loaded[512], left[512];
};

static void append(char *buf, size_t cap, const char *s)
{
	size_t n = strlen(buf);

	snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", s);
}

static void on_prog(void *ctx, const struct cw_prog_report *p)
{
	struct prog_list *l = ctx;
	char one[96];

	json_array_append_new(l->programs, json_pack("{s:s, s:s, s:b, s:I}", "object", l->object, "program",
						     p->name, "loaded", p->loaded,
						     "verified_insns", (json_int_t)p->verified_insns));
	if (p->loaded) {
		snprintf(one, sizeof(one), "%s (%u insns)", p->name, p->verified_insns);
		append(l->loaded, sizeof(l->loaded), one);
	} else {
		append(l->left, sizeof(l->left), p->name);
	}
}

/* One item for a loaded object: its programs loaded and left out. */
static void loaded_item(struct cw_check_report *r, const char *name, struct bpf_object *obj, uint64_t ns)
{
	struct prog_list l = { .programs = r->programs, .object = name };

	if (!obj)
		return;
	cw_prog_report(obj, on_prog, &l);
	cw_check_item(r, name, CW_CHECK_OK, NULL, "loads in %.0f ms: %s%s%s", ns / 1e6, l.loaded,
		      l.left[0] ? "; left out on this kernel: " : "", l.left);
}

/* The server probes of trace --inference, on the kernel probes' maps as
 * trace loads them. */
static void load_http(struct cw_check_report *r, struct cw_kernel_probes *kp)
{
	struct cw_http_probes_opts o = {
		.tracked_fd = cw_kernel_probes_tracked_fd(kp),
		.drops_fd = cw_kernel_probes_drops_fd(kp),
		.stats_fd = cw_kernel_probes_stats_fd(kp),
	};
	struct cw_http_probes *hp = NULL;
	uint64_t t0 = cw_monotonic_ns();
	char err[512];

	if (cw_http_probes_open(&hp, &o, err, sizeof(err))) {
		cw_check_item(r, "load http", CW_CHECK_FAIL, "run causeway --verbose check for libbpf's log; trace "
							     "--inference cannot run",
			      "%s", err);
		return;
	}
	loaded_item(r, "load http", cw_http_probes_object(hp), cw_monotonic_ns() - t0);
	cw_http_probes_close(hp);
}

static void load_kernel_probes(struct cw_check_report *r)
{
	static const char *const names[CW_KP_NFAMILIES] = { "load sched", "load io", "load net", "load mem",
							    "load proc" };
	struct cw_kernel_probes *kp = NULL;
	const struct cw_kernel_family_info *fam;
	char err[512];
	int n;

	if (cw_kernel_probes_open(&kp, NULL, err, sizeof(err))) {
		cw_check_item(r, "load kernel", CW_CHECK_FAIL, "run causeway --verbose check for libbpf's log",
			      "%s", err);
		return;
	}
	n = cw_kernel_probes_families(kp, &fam);
	for (int i = 0; i < n && i < CW_KP_NFAMILIES; i++)
		loaded_item(r, names[i], cw_kernel_probes_object(kp, i), fam[i].load_ns + fam[i].attach_ns);
	load_http(r, kp);
	cw_kernel_probes_close(kp);
}

/* The call probes as trace loads them: for a launched command or --pid
 * (filtered: sessions where the kernel has them), and for every process
 * (pairs), when the two differ. */
static void load_cuda(struct cw_check_report *r, int filtered, const char *name)
{
	struct cw_cuda_probes_opts o = { .filter_tracked = filtered, .py_mode = 1, .capture_summary = 1,
					 .tracked_fd = -1, .drops_fd = -1, .stats_fd = -1 };
	struct cw_cuda_probes *cp = NULL;
	uint64_t t0 = cw_monotonic_ns();
	char err[512];

	if (cw_cuda_probes_open(&cp, &o, err, sizeof(err))) {
		cw_check_item(r, name, CW_CHECK_FAIL, "run causeway --verbose check for libbpf's log", "%s", err);
		return;
	}
	loaded_item(r, name, cw_cuda_probes_object(cp), cw_monotonic_ns() - t0);
	cw_cuda_probes_close(cp);
}

static void load_discover(struct cw_check_report *r)
{
	struct cw_live_opts o = { .filter_tracked = 1, .hold = 1, .tracked_fd = -1, .drops_fd = -1, .stats_fd = -1 };
	struct cw_live_discover *ld = NULL;
	uint64_t t0 = cw_monotonic_ns();
	char err[512];

	if (cw_live_open(&ld, &o, err, sizeof(err))) {
		cw_check_item(r, "load discover", CW_CHECK_FAIL, "run causeway --verbose check for libbpf's log",
			      "%s", err);
		return;
	}
	loaded_item(r, "load discover", cw_live_object(ld), cw_monotonic_ns() - t0);
	cw_live_close(ld, NULL);
}

void cw_check_load(struct cw_check_report *r)
{
	load_kernel_probes(r);
	if (cw_kfeatures_cuda_blocker(cw_kfeatures()) >= 0) {
		cw_check_item(r, "load cuda", CW_CHECK_FAIL, NULL, "CUDA calls cannot be traced on this kernel");
		return;
	}
	load_cuda(r, 1, "load cuda");
	if (cw_kfeature_has(CW_KF_UPROBE_SESSION))
		load_cuda(r, 0, "load cuda whole host");
	load_discover(r);
}
