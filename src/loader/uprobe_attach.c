/* uprobe_attach: cuda.bpf.c loaded once (the build and programs this
 * kernel takes), attached per library copy. */
#include "loader/uprobe_attach.h"
#include "loader/bpf_arch.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include <bpf/bpf.h>

#include "bpf/events.h"
#include "cuda.skel.h"
#include "cuda_noloop.skel.h"
#include "cuda_sessctx.skel.h"
#include "loader/kernel_features.h"
#include "loader/libbpf_log.h"
#include "loader/umulti_link.h"
#include "loader/uprobe_int.h"
#include "loader/elfsyms.h"
#include "util/timeutil.h"

static unsigned ring_bytes(unsigned kb)
{
	unsigned b = 4096;

	if (!kb)
		kb = 8192;
	while (b < kb * 1024u && b < (1u << 30))
		b <<= 1;
	return b;
}

/* The variants are cuda.bpf.c built for kernels whose session kfuncs
 * take the context (sessctx) and for kernels without bpf_loop (noloop):
 * the same programs, maps and settings, so the one skeleton drives each. */
_Static_assert(sizeof(struct cuda_bpf) == sizeof(struct cuda_sessctx_bpf), "cuda skeletons differ");
_Static_assert(sizeof(struct cuda_bpf) == sizeof(struct cuda_noloop_bpf), "cuda skeletons differ");
_Static_assert(sizeof(*((struct cuda_bpf *)0)->rodata) == sizeof(*((struct cuda_sessctx_bpf *)0)->rodata),
	       "cuda settings differ");
_Static_assert(sizeof(*((struct cuda_bpf *)0)->rodata) == sizeof(*((struct cuda_noloop_bpf *)0)->rodata),
	       "cuda settings differ");

/* The build of cuda.bpf.c this kernel loads. */
static const void *cuda_object_bytes(const struct cw_kfeatures *kf, size_t *sz, const char **name)
{
	if (kf->has[CW_KF_SESSION_CTX] == CW_YES) {
		*name = "cuda_sessctx";
		return cuda_sessctx_bpf__elf_bytes(sz);
	}
	if (kf->has[CW_KF_BPF_LOOP] == CW_NO) {
		*name = "cuda_noloop";
		return cuda_noloop_bpf__elf_bytes(sz);
	}
	*name = "cuda";
	return cuda_bpf__elf_bytes(sz);
}

static struct cuda_bpf *open_cuda(const struct cw_kfeatures *kf, const char **name)
{
	struct cuda_bpf *obj;
	int err;

	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = cuda_bpf__create_skeleton(obj);
	if (!err) {
		obj->skeleton->data = (void *)cuda_object_bytes(kf, &obj->skeleton->data_sz, name);
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	}
	if (err) {
		cuda_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

/* Which programs load, from what the kernel was probed to have
 * (loader/kernel_features.c); nothing is learned from a failed load. */
static void choose_programs(struct cw_cuda_probes *cp)
{
	struct cuda_bpf *sk = cp->skel;

	bpf_program__set_autoload(sk->progs.cw_call_session, cp->session);
	bpf_program__set_autoload(sk->progs.cw_call_enter_multi, cp->multi && !cp->session);
	bpf_program__set_autoload(sk->progs.cw_call_return_multi, cp->multi && !cp->session);
	bpf_program__set_autoload(sk->progs.cw_call_enter, !cp->multi);
	bpf_program__set_autoload(sk->progs.cw_call_return, !cp->multi);
	bpf_program__set_autoload(sk->progs.cw_register_function, cp->sleepable);
	if (cp->session)
		bpf_program__set_expected_attach_type(sk->progs.cw_call_session, CW_BPF_TRACE_UPROBE_SESSION);
	if (cp->multi && !cp->session) {
		bpf_program__set_expected_attach_type(sk->progs.cw_call_enter_multi, CW_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(sk->progs.cw_call_return_multi, CW_BPF_TRACE_UPROBE_MULTI);
	}
}

int cw_cuda_probes_open(struct cw_cuda_probes **out, const struct cw_cuda_probes_opts *o, char *err,
			size_t errlen)
{
	const struct cw_kfeatures *kf = cw_kfeatures();
	int blocker = cw_kfeatures_cuda_blocker(kf);
	struct cw_cuda_probes *cp;
	unsigned rb;
	int rc;

	*out = NULL;
	if ((rc = cw_bpf_objects_check(err, errlen)))
		return rc;
	if (blocker >= 0) {
		snprintf(err, errlen, "this kernel cannot trace CUDA calls: it lacks %s (Linux %s)",
			 cw_kfeature_defs[blocker].what, cw_kfeature_defs[blocker].since);
		return -EOPNOTSUPP;
	}
	cp = calloc(1, sizeof(*cp));
	if (!cp)
		return -ENOMEM;
	/* uprobe_multi links where the kernel has them (6.6): detaching a
	 * perf-event uprobe waits ~0.1 s under a lock that serializes them
	 * on 6.18 (200 probes: 20 s to stop, even from parallel threads), a
	 * multi link detaches at once. Per-hit cost was not measurably
	 * different on this VM (bench/RESULTS.md, "trace"). no_multi (trace
	 * --no-uprobe-multi) forces per-probe links. */
	cp->multi = !o->no_multi && kf->has[CW_KF_UPROBE_MULTI] == CW_YES;
	/* Sessions where the kernel has them (6.13; Debian 13's 6.12 has
	 * kprobe sessions only) and some processes are not traced: a
	 * process not traced then pays the entry probe only, ~0.8 us a call
	 * instead of ~1.4 us. When every process is traced,
	 * every call runs its return anyway, and the pair costs a traced call
	 * ~25 ns less than a session (bench/RESULTS.md, "trace"). no_session
	 * (trace --no-uprobe-session) keeps the pair. */
	cp->session = cp->multi && !o->no_session && (o->filter_tracked || o->filter_cgroup) &&
		      kf->has[CW_KF_UPROBE_SESSION] == CW_YES;
	cp->sleepable = kf->has[CW_KF_SLEEPABLE_UPROBE] == CW_YES;
	cw_libbpf_log_reset();
	cp->skel = open_cuda(kf, &cp->object);
	if (!cp->skel) {
		rc = -errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot open the cuda bpf object: %s", strerror(-rc));
		goto fail;
	}
	rb = ring_bytes(o->ring_kb);
	bpf_map__set_max_entries(cp->skel->maps.rb_cuda, rb);
	cp->skel->rodata->cfg_ring_quarter = rb / 4;
	cp->skel->rodata->cfg_agg_bytes = o->agg_pct ? (uint64_t)rb * (o->agg_pct > 100 ? 100 : o->agg_pct) / 100 : 0;
	cp->skel->rodata->cfg_filter_tracked = o->filter_tracked ? 1 : 0;
	cp->skel->rodata->cfg_filter_cgroup = o->filter_cgroup ? 1 : 0;
	cp->skel->rodata->cfg_py_mode = (__u8)o->py_mode;
	cp->skel->rodata->cfg_native_stacks = o->native_stacks ? 1 : 0;
	cp->skel->rodata->cfg_capture_summary = o->capture_summary ? 1 : 0;
	if (o->fold_sample)
		cp->skel->rodata->cfg_fold_sample = o->fold_sample;
	/* The testing knob sizes both tiers together, so a test can fill
	 * them: half of it (a power of two, at least 1) slots, the rest (at
	 * least 1) fold_hist. */
	cp->fold_nslots = CW_FOLD_SLOTS;
	cp->fold_max = CW_FOLD_MAX;
	if (o->fold_max) {
		while (cp->fold_nslots > 1 && cp->fold_nslots > o->fold_max / 2)
			cp->fold_nslots /= 2;
		cp->fold_max = o->fold_max > cp->fold_nslots ? o->fold_max - cp->fold_nslots : 1;
	}
	bpf_map__set_max_entries(cp->skel->maps.fold_hist, cp->fold_max);
	bpf_map__set_max_entries(cp->skel->maps.fold_slots, cp->fold_nslots);
	cp->skel->rodata->cfg_fold_slot_mask = cp->fold_nslots - 1;
	if ((o->tracked_fd >= 0 && (rc = bpf_map__reuse_fd(cp->skel->maps.cw_tracked, o->tracked_fd))) ||
	    (o->drops_fd >= 0 && (rc = bpf_map__reuse_fd(cp->skel->maps.cw_drops, o->drops_fd))) ||
	    (o->stats_fd >= 0 && (rc = bpf_map__reuse_fd(cp->skel->maps.cw_stats, o->stats_fd)))) {
		snprintf(err, errlen, "cannot share the tracked-process maps: %s", strerror(-rc));
		goto fail;
	}
	choose_programs(cp);
	rc = cuda_bpf__load(cp->skel);
	if (rc) {
		char why[256];

		cw_libbpf_log_reason(why, sizeof(why));
		snprintf(err, errlen, "cannot load the cuda bpf programs (%s): %s%s%s", cw_cuda_probes_kind(cp),
			 strerror(-rc), why[0] ? ": " : "", why);
		goto fail;
	}
	cp->slots = mmap(NULL, CALL_SLOTS_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
			 bpf_map__fd(cp->skel->maps.call_slots), 0);
	if (cp->slots == MAP_FAILED) {
		rc = -errno;
		cp->slots = NULL;
		snprintf(err, errlen, "cannot map the open-call table: %s", strerror(-rc));
		goto fail;
	}
	cp->fold_slots = mmap(NULL, FOLD_SLOTS_BYTES(cp), PROT_READ | PROT_WRITE, MAP_SHARED,
			      bpf_map__fd(cp->skel->maps.fold_slots), 0);
	if (cp->fold_slots == MAP_FAILED) {
		rc = -errno;
		cp->fold_slots = NULL;
		snprintf(err, errlen, "cannot map the fold table: %s", strerror(-rc));
		goto fail;
	}
	cp->exit_link = bpf_program__attach(cp->skel->progs.cw_thread_exit);
	if (!cp->exit_link) {
		rc = -errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot attach the thread-exit probe: %s", strerror(-rc));
		goto fail;
	}
	*out = cp;
	return 0;
fail:
	cw_cuda_probes_close(cp);
	return rc;
}

int cw_cuda_probes_allow_cgroup(struct cw_cuda_probes *cp, uint64_t id)
{
	__u64 k = id;
	__u8 v = 1;

	if (bpf_map_update_elem(bpf_map__fd(cp->skel->maps.cw_cgroup_allow), &k, &v, BPF_ANY))
		return -errno;
	return 0;
}

void cw_cuda_probes_close(struct cw_cuda_probes *cp)
{
	size_t i;

	if (!cp)
		return;
	for (i = 0; i < cp->nlinks; i++)
		bpf_link__destroy(cp->links[i]);
	free(cp->links);
	bpf_link__destroy(cp->exit_link);
	for (i = 0; i < cp->nmfds; i++)
		close(cp->mfds[i]);
	free(cp->mfds);
	free(cp->files);
	if (cp->slots)
		munmap(cp->slots, CALL_SLOTS_BYTES);
	if (cp->fold_slots)
		munmap(cp->fold_slots, FOLD_SLOTS_BYTES(cp));
	cuda_bpf__destroy(cp->skel);
	free(cp);
}

static int push_link(struct cw_cuda_probes *cp, struct bpf_link *l)
{
	if (cp->nlinks == cp->links_alloc) {
		size_t na = cp->links_alloc ? cp->links_alloc * 2 : 256;
		struct bpf_link **nv = realloc(cp->links, na * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		cp->links = nv;
		cp->links_alloc = na;
	}
	cp->links[cp->nlinks++] = l;
	return 0;
}

static int attach_prog(struct cw_cuda_probes *cp, struct bpf_program *prog, const char *path, uint64_t off,
		       uint64_t cookie, int ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookie, .retprobe = ret);
	struct bpf_link *l;
	int rc;

	/* pid -1: every process that maps the file, now or later. */
	l = bpf_program__attach_uprobe_opts(prog, -1, path, off, &uo);
	if (!l)
		return errno ? -errno : -EINVAL;
	rc = push_link(cp, l);
	if (rc)
		bpf_link__destroy(l);
	return rc;
}

static int attach_one(struct cw_cuda_probes *cp, const char *path, uint64_t off, uint64_t cookie, int ret)
{
	return attach_prog(cp, ret ? cp->skel->progs.cw_call_return : cp->skel->progs.cw_call_enter, path, off,
			   cookie, ret);
}

static int push_mfd(struct cw_cuda_probes *cp, int fd)
{
	if (cp->nmfds == cp->mfds_alloc) {
		size_t na = cp->mfds_alloc ? cp->mfds_alloc * 2 : 16;
		int *nv = realloc(cp->mfds, na * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		cp->mfds = nv;
		cp->mfds_alloc = na;
	}
	cp->mfds[cp->nmfds++] = fd;
	return 0;
}

/* All hooks of one file as one uprobe session link, or (no sessions) two
 * uprobe_multi links (entries, returns).
 * Returns the pairs attached or -errno. */
static int attach_multi(struct cw_cuda_probes *cp, struct cw_elf *e, const char *path, const struct cw_hook_scan *sc)
{
	uint64_t *offs = calloc(sc->n, sizeof(*offs)), *cookies = calloc(sc->n, sizeof(*cookies));
	uint32_t n = 0;
	size_t i;
	int fe = -1, fr = -1, rc;

	if (!offs || !cookies) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < sc->n; i++)
		if (!cw_elf_vaddr_to_offset(e, sc->v[i].vaddr, &offs[n])) {
			cookies[n] = CW_COOKIE(sc->v[i].hook->op, sc->v[i].hook->source);
			n++;
		}
	if (!n) {
		rc = -ENOENT;
		goto out;
	}
	if (cp->session) {
		/* No fallback to the pairs: they are not loaded
		 * (cw_cuda_probes_open). */
		fe = cw_link_umulti(bpf_program__fd(cp->skel->progs.cw_call_session), CW_BPF_TRACE_UPROBE_SESSION, path,
				 offs, cookies, n, 0);
		if (fe < 0) {
			rc = fe;
			goto out;
		}
		if ((rc = push_mfd(cp, fe)))
			goto out;
		fe = -1;
		rc = (int)n;
		goto out;
	}
	fe = cw_link_umulti(bpf_program__fd(cp->skel->progs.cw_call_enter_multi), CW_BPF_TRACE_UPROBE_MULTI, path, offs,
			 cookies, n, 0);
	if (fe < 0) {
		rc = fe;
		goto out;
	}
	fr = cw_link_umulti(bpf_program__fd(cp->skel->progs.cw_call_return_multi), CW_BPF_TRACE_UPROBE_MULTI, path, offs,
			 cookies, n, 1);
	if (fr < 0) {
		rc = fr;
		goto out;
	}
	if ((rc = push_mfd(cp, fe)) || (rc = push_mfd(cp, fr)))
		goto out;
	fe = fr = -1;
	rc = (int)n;
out:
	if (fe >= 0)
		close(fe);
	if (fr >= 0)
		close(fr);
	free(offs);
	free(cookies);
	return rc;
}

int cw_cuda_probes_attach(struct cw_cuda_probes *cp, const char *path, struct cw_attach_report *rep,
			  char *err, size_t errlen)
{
	struct cw_attach_report r = { 0 };
	struct cw_hook_scan sc = { 0 };
	struct cw_elf *e = NULL;
	uint64_t t0 = cw_monotonic_ns();
	struct stat st;
	size_t i;
	int rc;

	if (stat(path, &st)) {
		rc = -errno;
		snprintf(err, errlen, "cannot read \"%s\": %s", path, strerror(errno));
		goto out;
	}
	for (i = 0; i < cp->nfiles; i++)
		if (cp->files[i].dev == (uint64_t)st.st_dev && cp->files[i].ino == (uint64_t)st.st_ino) {
			r.already = 1;
			rc = 0;
			goto out;
		}
	rc = cw_elf_open(&e, path);
	if (rc) {
		snprintf(err, errlen, "\"%s\" is not a readable ELF library", path);
		goto out;
	}
	if (!cw_elf_native(e)) {
		snprintf(err, errlen, "\"%s\" is a library for another architecture", path);
		rc = -ENOEXEC;
		goto out;
	}
	rc = cw_hook_scan_file(e, &sc);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the symbols of \"%s\": %s", path, strerror(-rc));
		goto out;
	}
	r.symbols = (int)sc.n;
	if (!sc.n) {
		rc = -ENOENT;
		snprintf(err, errlen, "\"%s\" exports none of the hooked CUDA/NCCL functions", path);
		goto out;
	}
	if (cp->sleepable) {
		/* __cudaRegisterFunction goes to the sleepable program (it may
		 * fault the name in); entry only, nothing happens at return. */
		for (i = 0; i < sc.n; i++) {
			uint64_t off;

			if (sc.v[i].hook->op != CW_HOOK_REGISTER_FUNCTION ||
			    cw_elf_vaddr_to_offset(e, sc.v[i].vaddr, &off))
				continue;
			if (!attach_prog(cp, cp->skel->progs.cw_register_function, path, off,
					 CW_COOKIE(sc.v[i].hook->op, sc.v[i].hook->source), 0)) {
				r.attached++;
				sc.v[i--] = sc.v[--sc.n];
			}
		}
	}
	if (cp->multi && sc.n) {
		int m = attach_multi(cp, e, path, &sc);

		if (m > 0) {
			r.attached += m;
			goto attached;
		}
		/* No fallback to per-probe links: the kernel was probed to
		 * have these links, and the per-probe programs are not loaded. */
		rc = m;
		snprintf(err, errlen, "cannot attach to \"%s\": %s%s", path, strerror(-m),
			 cp->session ? " (as uprobe sessions; trace --no-uprobe-session attaches pairs)"
				     : " (as uprobe_multi links; trace --no-uprobe-multi attaches one link a probe)");
		goto out;
	}
	for (i = 0; i < sc.n; i++) {
		const struct cw_hook_def *h = sc.v[i].hook;
		uint64_t off, cookie = CW_COOKIE(h->op, h->source);
		int a;

		if (cw_elf_vaddr_to_offset(e, sc.v[i].vaddr, &off)) {
			r.failed++;
			continue;
		}
		a = attach_one(cp, path, off, cookie, 0);
		if (!a && (a = attach_one(cp, path, off, cookie, 1)) != 0) {
			/* Keep entries and returns in pairs. */
			bpf_link__destroy(cp->links[--cp->nlinks]);
		}
		if (a) {
			if (!r.failed)
				snprintf(err, errlen, "cannot attach to %s in \"%s\": %s", h->name, path, strerror(-a));
			r.failed++;
			continue;
		}
		r.attached++;
	}
	if (!r.attached) {
		rc = -EINVAL;
		goto out;
	}
attached:
	if (cp->nfiles == cp->files_alloc) {
		size_t na = cp->files_alloc ? cp->files_alloc * 2 : 16;
		struct attached_file *nv = realloc(cp->files, na * sizeof(*nv));

		if (!nv) {
			rc = -ENOMEM;
			goto out;
		}
		cp->files = nv;
		cp->files_alloc = na;
	}
	cp->files[cp->nfiles].dev = st.st_dev;
	cp->files[cp->nfiles].ino = st.st_ino;
	cp->nfiles++;
	cp->npairs += r.attached;
	rc = r.attached;
out:
	r.ns = cw_monotonic_ns() - t0;
	if (rep)
		*rep = r;
	cw_elf_close(e);
	free(sc.v);
	return rc;
}

int cw_cuda_probes_nlibs(const struct cw_cuda_probes *cp)
{
	return (int)cp->nfiles;
}

int cw_cuda_probes_npairs(const struct cw_cuda_probes *cp)
{
	return cp->npairs;
}

const char *cw_cuda_probes_kind(const struct cw_cuda_probes *cp)
{
	return cp->session ? "uprobe sessions" : cp->multi ? "uprobe_multi pairs" : "perf-event uprobe pairs";
}

int cw_cuda_probes_pystack_fds(struct cw_cuda_probes *cp, int *procs_fd, int *tstate_fd)
{
	*procs_fd = bpf_map__fd(cp->skel->maps.cw_py_procs);
	*tstate_fd = bpf_map__fd(cp->skel->maps.cw_py_tstate);
	return *procs_fd < 0 || *tstate_fd < 0 ? -EBADF : 0;
}

struct bpf_object *cw_cuda_probes_object(struct cw_cuda_probes *cp)
{
	return cp && cp->skel ? cp->skel->obj : NULL;
}
