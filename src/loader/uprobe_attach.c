/* uprobe_attach: cuda.bpf.c loaded once, attached per library copy. */
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
#include "loader/elfsyms.h"
#include "util/timeutil.h"

#define H(n, o, s, l) { #n, CW_OP_##o, CW_SRC_##s, CW_LIB_##l }
#define HK(n, o, l) { #n, CW_HOOK_##o, CW_SRC_CUDA, CW_LIB_##l }

/* Names as exported by CUDA 13.0 / NCCL 2.2x. The driver's versioned names
 * are what cuda.h #defines the plain names to since CUDA 3.2 (cuMemAlloc
 * -> cuMemAlloc_v2), so those are the ones programs call. _ptsz/_ptds
 * variants are found by suffix at attach time. */
static const struct cw_hook_def hook_table[] = {
	/* runtime */
	H(cudaMalloc, cudaMalloc, CUDA, CUDART),
	H(cudaFree, cudaFree, CUDA, CUDART),
	H(cudaMallocAsync, cudaMallocAsync, CUDA, CUDART),
	H(cudaFreeAsync, cudaFreeAsync, CUDA, CUDART),
	H(cudaMallocManaged, cudaMallocManaged, CUDA, CUDART),
	H(cudaMallocHost, cudaMallocHost, CUDA, CUDART),
	H(cudaHostAlloc, cudaHostAlloc, CUDA, CUDART),
	H(cudaLaunchKernel, cudaLaunchKernel, CUDA, CUDART),
	H(cudaLaunchKernelExC, cudaLaunchKernelExC, CUDA, CUDART),
	H(cudaMemcpy, cudaMemcpy, CUDA, CUDART),
	H(cudaMemcpyAsync, cudaMemcpyAsync, CUDA, CUDART),
	H(cudaMemcpy2D, cudaMemcpy2D, CUDA, CUDART),
	H(cudaMemcpy2DAsync, cudaMemcpy2DAsync, CUDA, CUDART),
	H(cudaMemcpyPeer, cudaMemcpyPeer, CUDA, CUDART),
	H(cudaMemcpyPeerAsync, cudaMemcpyPeerAsync, CUDA, CUDART),
	H(cudaMemset, cudaMemset, CUDA, CUDART),
	H(cudaMemsetAsync, cudaMemsetAsync, CUDA, CUDART),
	H(cudaStreamSynchronize, cudaStreamSynchronize, CUDA, CUDART),
	H(cudaDeviceSynchronize, cudaDeviceSynchronize, CUDA, CUDART),
	H(cudaEventSynchronize, cudaEventSynchronize, CUDA, CUDART),
	H(cudaStreamWaitEvent, cudaStreamWaitEvent, CUDA, CUDART),
	H(cudaSetDevice, cudaSetDevice, CUDA, CUDART),
	H(cudaStreamBeginCapture, cudaStreamBeginCapture, GRAPH, CUDART),
	H(cudaStreamEndCapture, cudaStreamEndCapture, GRAPH, CUDART),
	H(cudaGraphInstantiate, cudaGraphInstantiate, GRAPH, CUDART),
	H(cudaGraphLaunch, cudaGraphLaunch, GRAPH, CUDART),
	H(cudaGraphInstantiateWithFlags, cudaGraphInstantiateWithFlags, GRAPH, CUDART),
	H(cudaGraphExecUpdate, cudaGraphExecUpdate, GRAPH, CUDART),
	H(cudaGraphUpload, cudaGraphUpload, GRAPH, CUDART),
	H(cudaGraphExecDestroy, cudaGraphExecDestroy, GRAPH, CUDART),
	H(cudaGraphDestroy, cudaGraphDestroy, GRAPH, CUDART),
	H(cudaHostRegister, cudaHostRegister, CUDA, CUDART),
	HK(__cudaRegisterFunction, REGISTER_FUNCTION, CUDART),
	/* driver */
	H(cuLaunchKernel, cuLaunchKernel, DRIVER, CUDA),
	H(cuLaunchKernelEx, cuLaunchKernelEx, DRIVER, CUDA),
	H(cuMemAlloc_v2, cuMemAlloc, DRIVER, CUDA),
	H(cuMemFree_v2, cuMemFree, DRIVER, CUDA),
	H(cuMemAllocAsync, cuMemAllocAsync, DRIVER, CUDA),
	H(cuMemAllocManaged, cuMemAllocManaged, DRIVER, CUDA),
	H(cuMemcpy, cuMemcpy, DRIVER, CUDA),
	H(cuMemcpyAsync, cuMemcpyAsync, DRIVER, CUDA),
	H(cuMemcpyHtoD_v2, cuMemcpyHtoD, DRIVER, CUDA),
	H(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, DRIVER, CUDA),
	H(cuMemcpyDtoH_v2, cuMemcpyDtoH, DRIVER, CUDA),
	H(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, DRIVER, CUDA),
	H(cuMemcpyDtoD_v2, cuMemcpyDtoD, DRIVER, CUDA),
	H(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, DRIVER, CUDA),
	H(cuCtxSynchronize, cuCtxSynchronize, DRIVER, CUDA),
	H(cuCtxSynchronize_v2, cuCtxSynchronize, DRIVER, CUDA), /* CUDA 13: (CUcontext) */
	H(cuStreamSynchronize, cuStreamSynchronize, DRIVER, CUDA),
	H(cuEventSynchronize, cuEventSynchronize, DRIVER, CUDA),
	H(cuMemCreate, cuMemCreate, DRIVER, CUDA),
	H(cuMemMap, cuMemMap, DRIVER, CUDA),
	H(cuCtxSetCurrent, cuCtxSetCurrent, DRIVER, CUDA),
	H(cuModuleGetFunction, cuModuleGetFunction, DRIVER, CUDA),
	H(cuLibraryGetKernel, cuLibraryGetKernel, DRIVER, CUDA),
	H(cuGraphLaunch, cuGraphLaunch, GRAPH, CUDA),
	H(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, GRAPH, CUDA),
	H(cuGraphExecUpdate_v2, cuGraphExecUpdate, GRAPH, CUDA),
	H(cuGraphExecDestroy, cuGraphExecDestroy, GRAPH, CUDA),
	H(cuMemHostAlloc, cuMemHostAlloc, DRIVER, CUDA),
	H(cuMemAllocHost_v2, cuMemAllocHost, DRIVER, CUDA),
	H(cuMemHostRegister_v2, cuMemHostRegister, DRIVER, CUDA),
	HK(cuDevicePrimaryCtxRetain, PRIMARY_CTX_RETAIN, CUDA),
	HK(cuCtxCreate, CTX_CREATE_V2, CUDA), /* the exported v1 has the v2 layout */
	HK(cuCtxCreate_v2, CTX_CREATE_V2, CUDA),
	HK(cuCtxCreate_v3, CTX_CREATE_V3, CUDA),
	HK(cuCtxCreate_v4, CTX_CREATE_V4, CUDA),
	/* NCCL */
	H(ncclCommInitRank, ncclCommInitRank, NCCL, NCCL),
	H(ncclCommInitRankConfig, ncclCommInitRankConfig, NCCL, NCCL),
	H(ncclCommInitAll, ncclCommInitAll, NCCL, NCCL),
	H(ncclCommSplit, ncclCommSplit, NCCL, NCCL),
	H(ncclCommDestroy, ncclCommDestroy, NCCL, NCCL),
	H(ncclAllReduce, ncclAllReduce, NCCL, NCCL),
	H(ncclAllGather, ncclAllGather, NCCL, NCCL),
	H(ncclReduceScatter, ncclReduceScatter, NCCL, NCCL),
	H(ncclBroadcast, ncclBroadcast, NCCL, NCCL),
	H(ncclBcast, ncclBcast, NCCL, NCCL),
	H(ncclReduce, ncclReduce, NCCL, NCCL),
	H(ncclSend, ncclSend, NCCL, NCCL),
	H(ncclRecv, ncclRecv, NCCL, NCCL),
	H(ncclGroupStart, ncclGroupStart, NCCL, NCCL),
	H(ncclGroupEnd, ncclGroupEnd, NCCL, NCCL),
	H(ncclAlltoAll, ncclAlltoAll, NCCL, NCCL), /* NCCL >= 2.28 */
	H(ncclCommInitRankScalable, ncclCommInitRankScalable, NCCL, NCCL),
	H(ncclCommAbort, ncclCommAbort, NCCL, NCCL),
	H(ncclCommFinalize, ncclCommFinalize, NCCL, NCCL),
	H(ncclCommGetAsyncError, ncclCommGetAsyncError, NCCL, NCCL),
	{ NULL, 0, 0, 0 },
};

const struct cw_hook_def *cw_hooks(void)
{
	return hook_table;
}

int cw_hooks_count(enum cw_lib_kind kind)
{
	const struct cw_hook_def *h;
	int n = 0;

	for (h = hook_table; h->name; h++)
		n += h->lib == kind;
	return n;
}

struct attached_file {
	uint64_t dev, ino;
};

struct cw_cuda_probes {
	struct cuda_bpf *skel;
	const char *object; /* which build of cuda.bpf.c: "cuda", "cuda_sessctx", "cuda_noloop" */
	int multi;         /* uprobe_multi links available */
	int session;       /* uprobe session links (cw_call_session) available */
	int sleepable;     /* cw_register_function (uprobe.s) loaded */
	int *mfds;         /* uprobe_multi link fds */
	size_t nmfds, mfds_alloc;
	struct bpf_link **links;
	size_t nlinks, links_alloc;
	struct attached_file *files;
	size_t nfiles, files_alloc;
	int npairs;
	unsigned fold_max; /* fold_hist's entries */
	unsigned fold_nslots; /* fold_slots' entries, a power of two */
	struct cw_call_slot *slots; /* call_slots, mapped */
	struct cw_fold_slot *fold_slots; /* fold_slots, mapped */
	struct bpf_link *exit_link; /* cw_thread_exit */
};

/* call_slots is an mmapable array: its elements lie value after value. */
#define CALL_SLOTS_BYTES (sizeof(struct cw_call_slot) * CW_CALL_SLOTS)
#define FOLD_SLOTS_BYTES(cp) (sizeof(struct cw_fold_slot) * (cp)->fold_nslots)

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

static const struct cw_hook_def *hook_for(const char *sym)
{
	size_t len = strlen(sym);
	const struct cw_hook_def *h;

	/* Per-thread default stream variants: cudaMemcpy_ptds (blocking ops)
	 * and cudaMemcpyAsync_ptsz (stream ops), same signature. */
	if (len > 5 && (!strcmp(sym + len - 5, "_ptsz") || !strcmp(sym + len - 5, "_ptds")))
		len -= 5;
	for (h = hook_table; h->name; h++)
		if (strlen(h->name) == len && !strncmp(h->name, sym, len))
			return h;
	return NULL;
}

struct found_sym {
	const struct cw_hook_def *hook;
	uint64_t vaddr;
};

struct scan {
	struct found_sym *v;
	size_t n, alloc;
};

static int scan_sym(const struct cw_elf_sym *s, void *arg)
{
	struct scan *sc = arg;
	const struct cw_hook_def *h;
	size_t i;

	if (s->type != STT_FUNC || !s->value)
		return 0;
	h = hook_for(s->name);
	if (!h)
		return 0;
	/* Aliases (pncclAllReduce = ncclAllReduce) share an address: one
	 * probe per address, or each call would be seen twice. */
	for (i = 0; i < sc->n; i++)
		if (sc->v[i].vaddr == s->value)
			return 0;
	if (sc->n == sc->alloc) {
		size_t na = sc->alloc ? sc->alloc * 2 : 64;
		struct found_sym *nv = realloc(sc->v, na * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		sc->v = nv;
		sc->alloc = na;
	}
	sc->v[sc->n].hook = h;
	sc->v[sc->n].vaddr = s->value;
	sc->n++;
	return 0;
}

static int scan_file(struct cw_elf *e, struct scan *sc)
{
	int rc = cw_elf_foreach_sym(e, 1, scan_sym, sc);

	return rc == -ENOENT ? 0 : rc;
}

int cw_hooks_in_file(const char *path, int *total_hooks)
{
	struct scan sc = { 0 };
	struct cw_elf *e;
	int rc;

	if (total_hooks) {
		const struct cw_hook_def *h;

		*total_hooks = 0;
		for (h = hook_table; h->name; h++)
			(*total_hooks)++;
	}
	rc = cw_elf_open(&e, path);
	if (rc)
		return rc;
	rc = scan_file(e, &sc);
	cw_elf_close(e);
	free(sc.v);
	return rc < 0 ? rc : (int)sc.n;
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
static int attach_multi(struct cw_cuda_probes *cp, struct cw_elf *e, const char *path, const struct scan *sc)
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
	struct scan sc = { 0 };
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
	rc = scan_file(e, &sc);
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

int cw_cuda_probes_add_ring(struct cw_cuda_probes *cp, struct ring_buffer **rb, ring_buffer_sample_fn fn,
			    void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.rb_cuda);

	if (!*rb) {
		*rb = ring_buffer__new(fd, fn, ctx, NULL);
		return *rb ? 0 : (errno ? -errno : -ENOMEM);
	}
	return ring_buffer__add(*rb, fd, fn, ctx);
}

int cw_cuda_probes_stats(struct cw_cuda_probes *cp, uint64_t out[CW_CS_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(cp->skel->maps.cuda_stats), c;
	uint64_t *vals;
	uint32_t k;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (k = 0; k < CW_CS_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

/* Bounds one sweep of call_state. */
#define INFLIGHT_SWEEP_MAX 16384

static void hand_over(struct cw_call_state *st, void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	st->e.hdr.type = CW_REC_CALL_ENTRY;
	st->e.hdr.size = sizeof(st->e);
	fn(ctx, &st->e);
}

/* Open calls in call_slots. A slot is taken with the probes' own protocol
 * (cuda.bpf.h): the owner word is swapped to 0 only if it still names the
 * call that was copied, and the return that loses that race discards its
 * record. One window stays: the call returns and its thread enters the
 * same op again between the copy and the swap (a call older than the
 * cutoff, within a few instructions); the old call is then stored twice
 * and the new one's return is counted as orphaned. */
static int take_slots(struct cw_call_slot *slots, uint64_t cutoff_mono_ns,
		      void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	struct cw_call_state st;
	uint64_t owner;
	int n = 0;
	size_t i;

	for (i = 0; i < CW_CALL_SLOTS; i++) {
		owner = __atomic_load_n(&slots[i].owner, __ATOMIC_ACQUIRE);
		if (!owner || __atomic_load_n(&slots[i].st.e.hdr.type, __ATOMIC_ACQUIRE) != CW_REC_CALL)
			continue;
		memcpy(&st, &slots[i].st, sizeof(st));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (st.e.hdr.type != CW_REC_CALL || st.e.hdr.ts_ns >= cutoff_mono_ns ||
		    !__atomic_compare_exchange_n(&slots[i].owner, &owner, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		hand_over(&st, fn, ctx);
		n++;
	}
	return n;
}

/* Open calls in call_state, the table of calls whose slot was held: those
 * older than the cutoff taken (deleted and handed over), or with peek_pid,
 * those of that process handed over as copies. */
static int walk_hashed(int fd, uint64_t cutoff_mono_ns, uint32_t peek_pid,
		       void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	struct cw_call_key key, next;
	struct cw_call_state st;
	int n = 0, i, more;

	if (bpf_map_get_next_key(fd, NULL, &key))
		return 0;
	/* The next key is read before the current one is deleted: a walk
	 * from a deleted key restarts at the first (so does one from a key
	 * the probes just deleted; the bound keeps that finite). The side
	 * whose delete succeeds owns the call: a return that loses discards
	 * its record. */
	for (i = 0; i < INFLIGHT_SWEEP_MAX; i++, key = next) {
		more = !bpf_map_get_next_key(fd, &key, &next);
		if (!bpf_map_lookup_elem(fd, &key, &st) && st.e.hdr.type == CW_REC_CALL &&
		    (peek_pid ? st.e.hdr.pid == peek_pid
			      : st.e.hdr.ts_ns < cutoff_mono_ns && !bpf_map_delete_elem(fd, &key))) {
			hand_over(&st, fn, ctx);
			n++;
		}
		if (!more)
			break;
	}
	return n;
}

int cw_cuda_probes_peek_inflight(struct cw_cuda_probes *cp, uint32_t pid,
				 void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.call_state), n = 0;
	struct cw_call_state st;

	if (fd < 0 || !cp->slots)
		return -EBADF;
	if (!pid) /* walk_hashed() would take, not peek */
		return 0;
	/* A copy that races with the return is at worst a call that just
	 * ended: the caller only reads it. */
	for (size_t k = 0; k < CW_CALL_SLOTS; k++) {
		if (!__atomic_load_n(&cp->slots[k].owner, __ATOMIC_ACQUIRE))
			continue;
		memcpy(&st, &cp->slots[k].st, sizeof(st));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (st.e.hdr.type != CW_REC_CALL || st.e.hdr.pid != pid)
			continue;
		hand_over(&st, fn, ctx);
		n++;
	}
	return n + walk_hashed(fd, 0, pid, fn, ctx);
}

int cw_cuda_probes_take_inflight(struct cw_cuda_probes *cp, uint64_t cutoff_mono_ns,
				 void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.call_state);

	if (fd < 0 || !cp->slots)
		return -EBADF;
	return take_slots(cp->slots, cutoff_mono_ns, fn, ctx) + walk_hashed(fd, cutoff_mono_ns, 0, fn, ctx);
}

int cw_cuda_probes_agg(struct cw_cuda_probes *cp, unsigned op, struct cw_cuda_agg *out)
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(cp->skel->maps.agg_hist), c, b;
	struct cw_cuda_agg *vals;
	uint32_t k = op;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || op >= CW_OP_MAX)
		return -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &k, vals)) {
		rc = -errno;
		goto out;
	}
	for (c = 0; c < ncpu; c++) {
		out->count += vals[c].count;
		out->sum_ns += vals[c].sum_ns;
		if (vals[c].max_ns > out->max_ns)
			out->max_ns = vals[c].max_ns;
		for (b = 0; b < CW_AGG_BUCKETS; b++)
			out->buckets[b] += vals[c].buckets[b];
	}
out:
	free(vals);
	return rc;
}

void cw_cuda_probes_fold_set(struct cw_cuda_probes *cp, int64_t mono_to_wall_ns, const uint64_t thresh[CW_OP_MAX])
{
	/* Plain stores into the mmapped .bss: each probe hit loads a whole
	 * 8-byte word, old or new. */
	cp->skel->bss->fold_wall_off = mono_to_wall_ns;
	memcpy((void *)cp->skel->bss->fold_thresh, thresh, sizeof(cp->skel->bss->fold_thresh));
}

/* The closed seconds of fold_slots (cuda.bpf.h): each LIVE slot of a
 * second up to last_second is copied, zeroed and freed (FREE stored last,
 * so a claimant starts from zero), then handed to fn. Returns the slots
 * drained. */
static int drain_fold_slots(struct cw_cuda_probes *cp, int64_t last_second, struct cw_fold_val *v,
			    void (*fn)(void *ctx, const struct cw_fold_key *k, const struct cw_fold_val *v),
			    void *ctx)
{
	struct cw_fold_key k;
	unsigned i;
	int n = 0;

	for (i = 0; cp->fold_slots && i < cp->fold_nslots; i++) {
		struct cw_fold_slot *s = &cp->fold_slots[i];

		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != CW_FOLD_SLOT_LIVE || s->key.second > last_second)
			continue;
		memcpy(&k, &s->key, sizeof(k));
		memcpy(v, &s->val, sizeof(*v));
		memset(&s->key, 0, sizeof(s->key));
		memset(&s->val, 0, sizeof(s->val));
		__atomic_store_n(&s->state, CW_FOLD_SLOT_FREE, __ATOMIC_RELEASE);
		fn(ctx, &k, v);
		n++;
	}
	return n;
}

int cw_cuda_probes_fold_drain(struct cw_cuda_probes *cp, int64_t last_second,
			      void (*fn)(void *ctx, const struct cw_fold_key *k, const struct cw_fold_val *v),
			      void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.fold_hist), n = 0, nk = 0, i, rc = 0;
	struct cw_fold_key *keys, cur, next;
	struct cw_fold_val *v;
	const void *prev = NULL;

	if (fd < 0)
		return -EBADF;
	keys = calloc(cp->fold_max, sizeof(*keys));
	v = malloc(sizeof(*v));
	if (!keys || !v) {
		rc = -ENOMEM;
		goto out;
	}
	n = drain_fold_slots(cp, last_second, v, fn, ctx);
	/* Keys first, then lookups and deletes: deleting while walking can
	 * restart the walk. */
	while (nk < (int)cp->fold_max && !bpf_map_get_next_key(fd, prev, &next)) {
		if (next.second <= last_second)
			keys[nk++] = next;
		cur = next;
		prev = &cur;
	}
	for (i = 0; i < nk; i++) {
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], v)) {
			if (bpf_map_lookup_elem(fd, &keys[i], v) || bpf_map_delete_elem(fd, &keys[i]))
				continue;
		}
		fn(ctx, &keys[i], v);
		n++;
	}
	rc = n;
out:
	free(keys);
	free(v);
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
