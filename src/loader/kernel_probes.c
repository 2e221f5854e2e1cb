/* kernel_probes.c: open, load and attach the kernel probe families.
 *
 * Each family is its own skeleton (build/gen/<family>.skel.h). The maps
 * every family shares (tracked tgids, drop and stats counters) and the rings
 * several families write (bulk, critical) are created by the first skeleton
 * that has them and adopted by the others with bpf_map__reuse_fd() before
 * their load.
 *
 * Each hook exists as a tp_btf program (name suffix _btf) and a raw_tp
 * program (_raw) with the same body. A family is loaded with its tp_btf
 * programs first; if the load fails (kernel without BTF-typed tracepoints
 * for it), it is reopened with the raw_tp ones. A program whose tracepoint
 * the running kernel lacks (no btf_trace_<name> type in vmlinux BTF, e.g.
 * sock_send_length before 6.3, block_io_start before 6.5) is not loaded.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf/events.h"
#include "loader/kernel_probes.h"
#include "loader/kernel_features.h"
#include "loader/libbpf_log.h"
#include "loader/bpf_arch.h"

#include "io.skel.h"
#include "mem.skel.h"
#include "net.skel.h"
#include "proc.skel.h"
#include "sched.skel.h"

#define CW_KP_MAX_LINKS 16

/* Maps shared between skeletons, by their name in the BPF sources. */
enum {
	CW_SHARED_TRACKED,
	CW_SHARED_DROPS,
	CW_SHARED_STATS,
	CW_SHARED_RB_SCHED,
	CW_SHARED_RB_BULK,
	CW_SHARED_RB_CRITICAL,
	CW_SHARED_N
};

struct cw_kp_fam {
	struct cw_kernel_family_info info;
	void *skel;             /* struct <family>_bpf */
	struct bpf_object *obj; /* skel's object */
	struct bpf_link *links[CW_KP_MAX_LINKS];
	int nlinks;
	int nprogs;
};

struct cw_kernel_probes {
	struct cw_kernel_probes_opts o;
	struct cw_kp_fam fam[CW_KP_NFAMILIES];
	struct cw_kernel_family_info info[CW_KP_NFAMILIES];
	int shared_fd[CW_SHARED_N]; /* our own dups; -1 when no family has it */
	uint64_t *tracked_bits;     /* cw_tracked, mapped (tracked_bits()) */
	struct btf *vmlinux;
	uint64_t startup_ns;
	ring_buffer_sample_fn sample_fn; /* from add_rings, for flush */
	void *sample_ctx;
};

#define TRACKED_BYTES ((size_t)CW_TRACKED_WORDS * sizeof(uint64_t))

static const char *const family_names[CW_KP_NFAMILIES] = { "sched", "io", "net", "mem", "proc" };
static const char *const shared_names[CW_SHARED_N] = { "cw_tracked", "cw_drops", "cw_stats",
							"rb_sched",   "rb_bulk",  "rb_critical" };

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void cw_kernel_probes_opts_init(struct cw_kernel_probes_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ring_kb = CW_KP_RING_KB_DEFAULT;
	o->critical_ring_kb = CW_KP_CRITICAL_RING_KB_DEFAULT;
	o->min_offcpu_ns = CW_KP_MIN_OFFCPU_DEFAULT_NS;
	o->page_alloc_flush_ms = CW_KP_PAGE_ALLOC_FLUSH_MS_DEFAULT;
	o->sock_flush_ms = CW_KP_SOCK_FLUSH_MS_DEFAULT;
	o->io_max_per_s = CW_KP_IO_MAX_PER_S_DEFAULT;
	o->families = CW_KP_ALL;
}

/* Ring sizes must be a power-of-two multiple of the page size. */
static uint32_t ring_bytes(unsigned kb)
{
	uint64_t want = (uint64_t)kb * 1024, sz = (uint64_t)sysconf(_SC_PAGESIZE);

	while (sz < want && sz < (1ull << 30))
		sz <<= 1;
	return (uint32_t)sz;
}

/* --- per-family skeleton glue -------------------------------------------- */

static int open_sched(struct cw_kernel_probes *kp, struct cw_kp_fam *f)
{
	struct sched_bpf *s = sched_bpf__open();

	if (!s)
		return -errno;
	s->rodata->cfg_min_offcpu_ns = kp->o.min_offcpu_ns;
	s->rodata->cfg_switch_state = cw_kfeature_has(CW_KF_SWITCH_STATE);
	f->skel = s;
	f->obj = s->obj;
	return 0;
}

static int open_io(struct cw_kernel_probes *kp, struct cw_kp_fam *f)
{
	struct io_bpf *s = io_bpf__open();

	if (!s)
		return -errno;
	s->rodata->cfg_io_max_per_s = kp->o.io_max_per_s;
	f->skel = s;
	f->obj = s->obj;
	return 0;
}

static int open_net(struct cw_kernel_probes *kp, struct cw_kp_fam *f)
{
	struct net_bpf *s = net_bpf__open();

	if (!s)
		return -errno;
	s->rodata->cfg_flush_ns = (uint64_t)kp->o.sock_flush_ms * 1000000ull;
	f->skel = s;
	f->obj = s->obj;
	return 0;
}

static int open_mem(struct cw_kernel_probes *kp, struct cw_kp_fam *f)
{
	struct mem_bpf *s = mem_bpf__open();

	if (!s)
		return -errno;
	s->rodata->cfg_flush_ns = (uint64_t)kp->o.page_alloc_flush_ms * 1000000ull;
	s->rodata->cfg_page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	f->skel = s;
	f->obj = s->obj;
	return 0;
}

static int open_proc(struct cw_kernel_probes *kp, struct cw_kp_fam *f)
{
	struct proc_bpf *s = proc_bpf__open();

	if (!s)
		return -errno;
	f->skel = s;
	f->obj = s->obj;
	return 0;
}

static void destroy_skel(int idx, void *skel)
{
	switch (idx) {
	case CW_KP_SCHED: sched_bpf__destroy(skel); break;
	case CW_KP_IO: io_bpf__destroy(skel); break;
	case CW_KP_NET: net_bpf__destroy(skel); break;
	case CW_KP_MEM: mem_bpf__destroy(skel); break;
	case CW_KP_PROC: proc_bpf__destroy(skel); break;
	}
}

static int (*const open_fns[CW_KP_NFAMILIES])(struct cw_kernel_probes *, struct cw_kp_fam *) = {
	open_sched, open_io, open_net, open_mem, open_proc,
};

/* --- generic load/attach --------------------------------------------------- */

static void family_unload(struct cw_kp_fam *f, int idx)
{
	for (int i = 0; i < f->nlinks; i++)
		bpf_link__destroy(f->links[i]);
	f->nlinks = 0;
	if (f->skel)
		destroy_skel(idx, f->skel);
	f->skel = NULL;
	f->obj = NULL;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Picks the variant's programs, adopts shared maps, sizes rings. */
static int family_prepare(struct cw_kernel_probes *kp, struct cw_kp_fam *f, int raw)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	f->nprogs = 0;
	bpf_object__for_each_program(prog, f->obj) {
		const char *name = bpf_program__name(prog);
		const char *sec = bpf_program__section_name(prog);
		const char *tp = strchr(sec, '/');
		char tname[128];
		int want = ends_with(name, raw ? "_raw" : "_btf");

		if (want && tp && kp->vmlinux) {
			snprintf(tname, sizeof(tname), "btf_trace_%s", tp + 1);
			if (btf__find_by_name_kind(kp->vmlinux, tname, BTF_KIND_TYPEDEF) < 0)
				want = 0; /* this kernel has no such tracepoint */
		}
		/* the tracepoints of the feature table, as it says (the same
		 * answer on a real kernel; CW_KFEATURES_OFF can take them away) */
		if (want && tp && !strcmp(tp + 1, "block_io_start") && !cw_kfeature_has(CW_KF_BLOCK_IO_START))
			want = 0;
		if (want && tp && strstr(tp + 1, "_length") && !strncmp(tp + 1, "sock_", 5) &&
		    !cw_kfeature_has(CW_KF_SOCK_LENGTH))
			want = 0;
		bpf_program__set_autoload(prog, want);
		f->nprogs += want;
	}
	bpf_object__for_each_map(map, f->obj) {
		const char *name = bpf_map__name(map);

		for (int i = 0; i < CW_SHARED_N; i++) {
			if (strcmp(name, shared_names[i]) != 0)
				continue;
			if (kp->shared_fd[i] >= 0) {
				err = bpf_map__reuse_fd(map, kp->shared_fd[i]);
				if (err)
					return err;
			} else if (i == CW_SHARED_RB_CRITICAL) {
				bpf_map__set_max_entries(map, ring_bytes(kp->o.critical_ring_kb));
			} else if (i == CW_SHARED_RB_SCHED || i == CW_SHARED_RB_BULK) {
				bpf_map__set_max_entries(map, ring_bytes(kp->o.ring_kb));
			}
			/* reuse_fd() replaces the map's name: name is stale now. */
			break;
		}
	}
	return 0;
}

static int family_load(struct cw_kernel_probes *kp, int idx, char *err, size_t errlen)
{
	struct cw_kp_fam *f = &kp->fam[idx];
	uint64_t t0 = mono_ns();
	int rc = 0;

	/* raw_tp where the kernel has no tp_btf (probed); tp_btf first
	 * otherwise, raw_tp still tried when a family's tp_btf programs do
	 * not load (an arm64 kernel before 6.0 loads none). */
	int first_raw = kp->o.raw_tp_only || cw_kfeatures()->has[CW_KF_TP_BTF] == CW_NO;

	for (int raw = first_raw; raw <= 1; raw++) {
		cw_libbpf_log_reset();
		rc = open_fns[idx](kp, f);
		if (rc)
			break;
		rc = family_prepare(kp, f, raw);
		if (!rc)
			rc = bpf_object__load(f->obj);
		if (!rc) {
			f->info.variant = raw ? "raw_tp" : "tp_btf";
			break;
		}
		family_unload(f, idx);
	}
	if (rc) {
		char why[256];

		cw_libbpf_log_reason(why, sizeof(why));
		snprintf(err, errlen, "cannot load the %s probes: %s%s%s", family_names[idx], strerror(-rc),
			 why[0] ? ": " : "", why);
		return rc;
	}
	for (int i = 0; i < CW_SHARED_N; i++) {
		struct bpf_map *m;

		if (kp->shared_fd[i] >= 0)
			continue;
		m = bpf_object__find_map_by_name(f->obj, shared_names[i]);
		if (m && (kp->shared_fd[i] = dup(bpf_map__fd(m))) < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot keep the %s map: %s", shared_names[i], strerror(errno));
			return rc;
		}
	}
	f->info.load_ns = mono_ns() - t0;
	return 0;
}

static int family_attach(struct cw_kernel_probes *kp, int idx, char *err, size_t errlen)
{
	struct cw_kp_fam *f = &kp->fam[idx];
	struct bpf_program *prog;
	uint64_t t0 = mono_ns();

	bpf_object__for_each_program(prog, f->obj) {
		struct bpf_link *l;

		if (!bpf_program__autoload(prog))
			continue;
		if (f->nlinks >= CW_KP_MAX_LINKS) {
			snprintf(err, errlen, "too many %s programs", family_names[idx]);
			return -E2BIG;
		}
		l = bpf_program__attach(prog);
		if (!l) {
			int rc = -errno;

			snprintf(err, errlen, "cannot attach %s (%s): %s", bpf_program__name(prog),
				 bpf_program__section_name(prog), strerror(-rc));
			return rc;
		}
		f->links[f->nlinks++] = l;
	}
	f->info.attached = f->nlinks;
	f->info.attach_ns = mono_ns() - t0;
	return 0;
}

/* Root, or CAP_BPF + CAP_PERFMON (kernel >= 5.8), or CAP_SYS_ADMIN. */
static int have_privilege(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f;

	if (geteuid() == 0)
		return 1;
	f = fopen("/proc/self/status", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff & (1ull << 21)) || ((eff & (1ull << 38)) && (eff & (1ull << 39)));
}

int cw_kernel_probes_open(struct cw_kernel_probes **out, const struct cw_kernel_probes_opts *o,
			  char *err, size_t errlen)
{
	struct cw_kernel_probes *kp;
	uint64_t t0 = mono_ns();
	int rc = 0;

	*out = NULL;
	if ((rc = cw_bpf_objects_check(err, errlen)))
		return rc;
	if (!have_privilege()) {
		snprintf(err, errlen, "kernel tracing needs root (or CAP_BPF and CAP_PERFMON)");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err, errlen, "the kernel has no BTF (\"/sys/kernel/btf/vmlinux\" is missing); "
				      "CONFIG_DEBUG_INFO_BTF=y is required");
		return -ENOENT;
	}
	kp = calloc(1, sizeof(*kp));
	if (!kp) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (o)
		kp->o = *o;
	else
		cw_kernel_probes_opts_init(&kp->o);
	if (!kp->o.ring_kb)
		kp->o.ring_kb = CW_KP_RING_KB_DEFAULT;
	if (!kp->o.critical_ring_kb)
		kp->o.critical_ring_kb = CW_KP_CRITICAL_RING_KB_DEFAULT;
	if (!kp->o.page_alloc_flush_ms)
		kp->o.page_alloc_flush_ms = CW_KP_PAGE_ALLOC_FLUSH_MS_DEFAULT;
	if (!kp->o.sock_flush_ms)
		kp->o.sock_flush_ms = CW_KP_SOCK_FLUSH_MS_DEFAULT;
	if (!kp->o.io_max_per_s)
		kp->o.io_max_per_s = CW_KP_IO_MAX_PER_S_DEFAULT;
	if (!kp->o.families)
		kp->o.families = CW_KP_ALL;
	for (int i = 0; i < CW_SHARED_N; i++)
		kp->shared_fd[i] = -1;
	for (int i = 0; i < CW_KP_NFAMILIES; i++) {
		kp->fam[i].info.name = family_names[i];
		kp->fam[i].info.variant = "";
		kp->fam[i].info.enabled = !!(kp->o.families & (1u << i));
	}

	kp->vmlinux = btf__load_vmlinux_btf();
	if (!kp->vmlinux) {
		rc = -errno;
		snprintf(err, errlen, "cannot read kernel BTF: %s", strerror(-rc));
		goto fail;
	}
	for (int i = 0; i < CW_KP_NFAMILIES; i++) {
		if (!kp->fam[i].info.enabled)
			continue;
		rc = family_load(kp, i, err, errlen);
		if (rc)
			goto fail;
	}
	/* Attach only after every family loaded, so a late load failure
	 * leaves nothing half-running. */
	for (int i = 0; i < CW_KP_NFAMILIES; i++) {
		if (!kp->fam[i].skel)
			continue;
		rc = family_attach(kp, i, err, errlen);
		if (rc)
			goto fail;
	}
	kp->startup_ns = mono_ns() - t0;
	*out = kp;
	return 0;
fail:
	cw_kernel_probes_close(kp);
	return rc;
}

void cw_kernel_probes_close(struct cw_kernel_probes *kp)
{
	if (!kp)
		return;
	for (int i = 0; i < CW_KP_NFAMILIES; i++)
		family_unload(&kp->fam[i], i);
	if (kp->tracked_bits)
		munmap(kp->tracked_bits, TRACKED_BYTES);
	for (int i = 0; i < CW_SHARED_N; i++)
		if (kp->shared_fd[i] >= 0)
			close(kp->shared_fd[i]);
	btf__free(kp->vmlinux);
	free(kp);
}

/* The tracked-process bitmap (bpf/common.bpf.h), mapped on first use;
 * NULL when no family is loaded or the mapping fails. */
static uint64_t *tracked_bits(struct cw_kernel_probes *kp)
{
	void *m;

	if (kp->tracked_bits || kp->shared_fd[CW_SHARED_TRACKED] < 0)
		return kp->tracked_bits;
	m = mmap(NULL, TRACKED_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, kp->shared_fd[CW_SHARED_TRACKED], 0);
	if (m != MAP_FAILED)
		kp->tracked_bits = m;
	return kp->tracked_bits;
}

/* The bitmap word and bit of tgid; NULL beyond PID_MAX_LIMIT or unmapped. */
static uint64_t *tracked_word(struct cw_kernel_probes *kp, uint32_t tgid, uint64_t *bit)
{
	uint64_t *bits = tracked_bits(kp);

	if (!bits || tgid / 64 >= CW_TRACKED_WORDS)
		return NULL;
	*bit = 1ull << (tgid % 64);
	return &bits[tgid / 64];
}

int cw_kernel_probes_mark_server(struct cw_kernel_probes *kp, uint32_t tgid, int on)
{
	struct bpf_map *m = kp->fam[CW_KP_SCHED].obj ? bpf_object__find_map_by_name(kp->fam[CW_KP_SCHED].obj, "cw_servers")
						     : NULL;
	uint8_t one = 1;

	if (!m)
		return -ENOENT;
	if (!on)
		return bpf_map_delete_elem(bpf_map__fd(m), &tgid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(bpf_map__fd(m), &tgid, &one, BPF_ANY) ? -errno : 0;
}

int cw_kernel_probes_track(struct cw_kernel_probes *kp, uint32_t tgid)
{
	uint64_t *w, bit;

	if (tgid == 0 || (kill((pid_t)tgid, 0) != 0 && errno == ESRCH))
		return -ESRCH;
	w = tracked_word(kp, tgid, &bit);
	if (!w)
		return -EINVAL;
	__atomic_fetch_or(w, bit, __ATOMIC_SEQ_CST);
	return 0;
}

int cw_kernel_probes_is_tracked(struct cw_kernel_probes *kp, uint32_t tgid)
{
	uint64_t *w, bit;

	w = tracked_word(kp, tgid, &bit);
	return w && (__atomic_load_n(w, __ATOMIC_ACQUIRE) & bit);
}

int cw_kernel_probes_tracked_fd(struct cw_kernel_probes *kp)
{
	return kp->shared_fd[CW_SHARED_TRACKED];
}

int cw_kernel_probes_drops_fd(struct cw_kernel_probes *kp)
{
	return kp->shared_fd[CW_SHARED_DROPS];
}

int cw_kernel_probes_stats_fd(struct cw_kernel_probes *kp)
{
	return kp->shared_fd[CW_SHARED_STATS];
}

int cw_kernel_probes_add_rings(struct cw_kernel_probes *kp, struct ring_buffer **rb,
			       ring_buffer_sample_fn fn, void *ctx)
{
	static const int rings[] = { CW_SHARED_RB_CRITICAL, CW_SHARED_RB_SCHED, CW_SHARED_RB_BULK };
	int n = 0;

	kp->sample_fn = fn;
	kp->sample_ctx = ctx;
	for (size_t i = 0; i < sizeof(rings) / sizeof(rings[0]); i++) {
		int fd = kp->shared_fd[rings[i]];

		if (fd < 0)
			continue;
		if (!*rb) {
			*rb = ring_buffer__new(fd, fn, ctx, NULL);
			if (!*rb)
				return -errno;
		} else if (ring_buffer__add(*rb, fd, fn, ctx)) {
			return -errno;
		}
		n++;
	}
	return n;
}

static int sum_percpu(int fd, uint64_t *out, unsigned n)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	if (fd < 0) {
		memset(out, 0, n * sizeof(*out));
		return 0;
	}
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < n; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

int cw_kernel_probes_drops(struct cw_kernel_probes *kp, struct cw_kernel_drop_counts *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sum_percpu(kp->shared_fd[CW_SHARED_DROPS], out->drops, CW_DROP_MAX);
	if (!rc)
		rc = sum_percpu(kp->shared_fd[CW_SHARED_STATS], out->stats, CW_STAT_MAX);
	for (int i = 0; i < CW_DROP_MAX; i++)
		out->total_drops += out->drops[i];
	return rc;
}

int cw_kernel_probes_families(struct cw_kernel_probes *kp, const struct cw_kernel_family_info **out)
{
	for (int i = 0; i < CW_KP_NFAMILIES; i++)
		kp->info[i] = kp->fam[i].info;
	*out = kp->info;
	return CW_KP_NFAMILIES;
}

uint64_t cw_kernel_probes_startup_ns(struct cw_kernel_probes *kp)
{
	return kp->startup_ns;
}

const char *cw_kernel_drop_name(unsigned idx)
{
	static const char *const n[CW_DROP_MAX] = {
		[CW_DROP_SCHED] = "sched",   [CW_DROP_IO] = "io",           [CW_DROP_NET] = "net",
		[CW_DROP_MEM] = "mem",       [CW_DROP_PROC] = "proc",       [CW_DROP_OOM] = "oom",
		[CW_DROP_CUDA] = "cuda",     [CW_DROP_DRIVER] = "driver",   [CW_DROP_NCCL] = "nccl",
		[CW_DROP_PYSTACK] = "pystack", [CW_DROP_USTACK] = "ustack", [CW_DROP_KNAME] = "kernel_name",
		[CW_DROP_HTTP] = "http",
	};

	return idx < CW_DROP_MAX ? n[idx] : NULL;
}

const char *cw_kernel_stat_name(unsigned idx)
{
	static const char *const n[CW_STAT_MAX] = {
		[CW_STAT_OFFCPU_FILTERED] = "offcpu_filtered",
		[CW_STAT_OFFCPU_NOSTART] = "offcpu_nostart",
		[CW_STAT_IO_CAPPED] = "io_capped",
		[CW_STAT_IO_MAPFULL] = "io_map_full",
		[CW_STAT_MEM_MAPFULL] = "mem_map_full",
		[CW_STAT_NET_MAPFULL] = "net_map_full",
		[CW_STAT_OFFCPU_SLOT_TAKEN] = "offcpu_slot_taken",
		[CW_STAT_HTTP_CONNS_FULL] = "http_conns_full",
	};

	return idx < CW_STAT_MAX ? n[idx] : NULL;
}

/* Emits the aggregation windows (page allocations, socket volume) that the
 * BPF side has not flushed because their thread went quiet: all of them
 * when all is set (at stop), else those older than their interval. The
 * records go to the ring callback exactly as if they came from the ring.
 * An update racing with the delete can lose the bytes of one call. */
int cw_kernel_probes_flush(struct cw_kernel_probes *kp, int all)
{
	uint64_t now = mono_ns();
	int n = 0;

	if (!kp->sample_fn)
		return -EINVAL;
	if (kp->fam[CW_KP_MEM].skel) {
		struct mem_bpf *s = kp->fam[CW_KP_MEM].skel;
		int fd = bpf_map__fd(s->maps.page_agg);
		uint64_t interval = (uint64_t)kp->o.page_alloc_flush_ms * 1000000ull;
		uint32_t key, next, *prevk = NULL;
		struct cw_page_agg a;

		while (bpf_map_get_next_key(fd, prevk, &next) == 0) {
			key = next;
			prevk = &key;
			if (bpf_map_lookup_elem(fd, &key, &a) || !a.pages)
				continue;
			if (!all && now - a.start_ns < interval)
				continue;
			if (bpf_map_delete_elem(fd, &key))
				continue;
			struct cw_mem r = { 0 };
			r.hdr.type = CW_REC_MEM;
			r.hdr.size = sizeof(r);
			r.hdr.version = CW_EVENTS_VERSION;
			r.hdr.source = CW_SRC_MEM;
			r.hdr.op = CW_OP_page_alloc;
			r.hdr.ts_ns = a.start_ns;
			r.hdr.pid = a.pid;
			r.hdr.tid = key;
			r.hdr.cgroup_id = a.cgroup_id;
			memcpy(r.hdr.comm, a.comm, sizeof(r.hdr.comm));
			r.pages = a.pages;
			r.interval_ns = now - a.start_ns;
			r.bytes = a.pages * (uint64_t)sysconf(_SC_PAGESIZE);
			kp->sample_fn(kp->sample_ctx, &r, sizeof(r));
			n++;
		}
	}
	if (kp->fam[CW_KP_NET].skel) {
		struct net_bpf *s = kp->fam[CW_KP_NET].skel;
		int fd = bpf_map__fd(s->maps.sock_agg);
		uint64_t interval = (uint64_t)kp->o.sock_flush_ms * 1000000ull;
		struct cw_sock_key key, next, *prevk = NULL;
		struct cw_sock_agg a;

		while (bpf_map_get_next_key(fd, prevk, &next) == 0) {
			key = next;
			prevk = &key;
			if (bpf_map_lookup_elem(fd, &key, &a) || !a.bytes)
				continue;
			if (!all && now - a.start_ns < interval)
				continue;
			if (bpf_map_delete_elem(fd, &key))
				continue;
			struct cw_net r = { 0 };
			r.hdr.type = CW_REC_NET;
			r.hdr.size = sizeof(r);
			r.hdr.version = CW_EVENTS_VERSION;
			r.hdr.source = CW_SRC_NET;
			r.hdr.op = key.dir ? CW_OP_sock_recv : CW_OP_sock_send;
			r.hdr.ts_ns = a.start_ns;
			r.hdr.pid = a.pid;
			r.hdr.tid = key.tid;
			r.hdr.cgroup_id = a.cgroup_id;
			memcpy(r.hdr.comm, a.comm, sizeof(r.hdr.comm));
			r.family = a.family;
			r.sport = a.sport;
			r.dport = a.dport;
			r.state = a.state;
			memcpy(r.saddr, a.saddr, 16);
			memcpy(r.daddr, a.daddr, 16);
			r.bytes = a.bytes;
			kp->sample_fn(kp->sample_ctx, &r, sizeof(r));
			n++;
		}
	}
	return n;
}

struct bpf_object *cw_kernel_probes_object(struct cw_kernel_probes *kp, int idx)
{
	return kp && idx >= 0 && idx < CW_KP_NFAMILIES && kp->fam[idx].skel ? kp->fam[idx].obj : NULL;
}
