/* A trace's start-up, as steps run in order (trace_steps_run): each makes
 * one part of the session or says why it cannot, and the first failure
 * ends the start with that step's -errno. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "loader/discover.h"
#include "loader/kernel_features.h"
#include "loader/probe_features.h"
#include "loader/prog_stats.h"
#include "metrics/live_metrics.h"
#include "metrics/writer_lag.h"
#include "store/footprint.h"
#include "trace/inference.h"
#include "trace/cap.h"
#include "trace/gpu.h"
#include "trace/ras.h"
#include "trace/python.h"
#include "trace/session.h"
#include "trace/tenant.h"
#include "trace/view.h"
#include "util/log.h"
#include "util/timeutil.h"

static int step_privilege(struct trace *t, char *err, size_t errlen)
{
	(void)t;
	if (cw_may_trace())
		return 0;
	snprintf(err, errlen, "trace needs root (CAP_BPF and CAP_PERFMON to load and attach probes)");
	return -EPERM;
}

static int step_btf(struct trace *t, char *err, size_t errlen)
{
	(void)t;
	if (!access("/sys/kernel/btf/vmlinux", R_OK))
		return 0;
	snprintf(err, errlen, "the kernel has no BTF (\"/sys/kernel/btf/vmlinux\" is missing); "
			      "CONFIG_DEBUG_INFO_BTF=y is required");
	return -ENOENT;
}

static int step_pids(struct trace *t, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < t->o.npids; i++)
		if (!cw_pid_exists(t->o.pids[i])) {
			snprintf(err, errlen, "no process with pid %u", t->o.pids[i]);
			return -ESRCH;
		}
	return 0;
}

static int step_libs(struct trace *t, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < t->o.nlibs; i++) {
		int n = cw_hooks_in_file(t->o.libs[i], NULL);

		if (n > 0)
			continue;
		if (n == 0 || n == -ENOEXEC)
			snprintf(err, errlen, "\"%s\" exports none of the hooked CUDA/NCCL functions", t->o.libs[i]);
		else
			snprintf(err, errlen, "cannot read \"%s\": %s", t->o.libs[i], strerror(-n));
		return n < 0 ? n : -ENOENT;
	}
	return 0;
}

static void trace_default_cap(struct trace *t);

/* The cap holds the database, its WAL and the reserve file (footprint.h):
 * one too small for the empty store and room for rows is refused, with
 * the least that works; a default cap that small (a nearly full
 * filesystem) is raised to it. */
static int check_cap(struct trace *t, char *err, size_t errlen)
{
	int64_t empty = cw_footprint_empty_bytes(t->st->db), min;
	char cap[32], least[32];

	if (empty < 0)
		return 0;
	min = cw_footprint_min_cap(empty, cw_footprint_page_of(t->st->db));
	if ((int64_t)t->o.size_cap >= min)
		return 0;
	if (t->cap_defaulted) {
		t->o.size_cap = (uint64_t)min;
		return 0;
	}
	cw_trace_format_bytes(t->o.size_cap, cap, sizeof(cap));
	cw_trace_format_bytes((uint64_t)min, least, sizeof(least));
	snprintf(err, errlen,
		 "size cap %s is below what the store needs: at least %s (the empty database, its WAL and the "
		 "reserve beside it; --size-cap or store.max_size)",
		 cap, least);
	return -EINVAL;
}

static int step_store(struct trace *t, char *err, size_t errlen)
{
	int rc;

	/* The cap before the file: a new file's page size follows it. */
	if (!t->o.size_cap)
		trace_default_cap(t);
	rc = cw_store_create(&t->st, t->o.db, cw_footprint_page_size((int64_t)t->o.size_cap), err, errlen);

	if (rc)
		return rc < 0 ? rc : -EIO;
	if ((rc = check_cap(t, err, errlen)))
		return rc;
	/* Best effort: without it, a full disk may keep the loss counters
	 * out of the database (they are still said on stderr). */
	if (cw_store_reserve_take(&t->reserve, t->o.db, (int64_t)t->o.size_cap))
		cw_debug("no room reserved beside \"%s\"", t->o.db);
	return 0;
}

static int step_spawn(struct trace *t, char *err, size_t errlen)
{
	int rc;

	if (!t->o.command || !(rc = trace_spawn_command(t)))
		return 0;
	snprintf(err, errlen, "cannot start \"%s\": %s", t->o.command[0], strerror(-rc));
	return rc;
}

static int step_kernel_probes(struct trace *t, char *err, size_t errlen)
{
	struct cw_kernel_probes_opts ko;
	int blocker = cw_kfeatures_cuda_blocker(cw_kfeatures());

	/* A kernel that cannot trace CUDA calls is named for that first (on
	 * 5.10 the kernel families fail too, for a reason that says less). */
	if (blocker >= 0) {
		snprintf(err, errlen, "this kernel cannot trace CUDA calls: it lacks %s (Linux %s)",
			 cw_kfeature_defs[blocker].what, cw_kfeature_defs[blocker].since);
		return -EOPNOTSUPP;
	}
	cw_kernel_probes_opts_init(&ko);
	if (t->o.ring_kb)
		ko.ring_kb = t->o.ring_kb;
	return cw_kernel_probes_open(&t->kp, &ko, err, errlen);
}

static int step_cuda_probes(struct trace *t, char *err, size_t errlen)
{
	struct cw_cuda_probes_opts co;
	int rc;

	memset(&co, 0, sizeof(co));
	co.ring_kb = t->o.ring_kb;
	co.agg_pct = t->o.agg_pct;
	co.filter_tracked = t->o.npids || t->o.command;
	co.filter_cgroup = t->o.ntenants > 0;
	co.py_mode = t->o.py_mode;
	co.native_stacks = t->o.native_stacks;
	co.capture_summary = t->o.capture_summary;
	co.fold_max = t->o.fold_map_entries;
	co.no_multi = t->o.no_uprobe_multi;
	co.no_session = t->o.no_uprobe_session;
	co.tracked_fd = cw_kernel_probes_tracked_fd(t->kp);
	co.drops_fd = cw_kernel_probes_drops_fd(t->kp);
	co.stats_fd = cw_kernel_probes_stats_fd(t->kp);
	if ((rc = cw_cuda_probes_open(&t->cp, &co, err, errlen)))
		return rc;
	if (!t->o.nlibs) {
		struct cw_live_opts lo = {
			.filter_tracked = co.filter_tracked,
			.hold = !t->o.no_hold,
			.tracked_fd = co.tracked_fd,
			.drops_fd = co.drops_fd,
			.stats_fd = co.stats_fd,
			.attach = trace_live_attach,
			.ctx = t,
		};
		char why[512];

		/* Without it (Linux < 6.7) the one-second rescan finds copies. */
		if (cw_live_open(&t->live, &lo, why, sizeof(why)))
			cw_debug("%s; library copies are found by the rescan only", why);
	}
	return 0;
}

static int step_tenant(struct trace *t, char *err, size_t errlen)
{
	int rc = trace_tenant_new(&t->tenant, t->o.tenants, t->o.ntenants, t->cp, err, errlen);

	if (rc)
		return rc < 0 ? rc : -EINVAL;
	if (t->o.ntenants && !trace_tenant_allowed_now(t->tenant) && !t->o.json)
		cw_trace_say(&t->o.say, "causeway: no cgroup matches the tenant filter yet; its calls are traced "
					"once one appears\n");
	return 0;
}

static int step_attach(struct trace *t, char *err, size_t errlen)
{
	char why[512];
	int i, rc;

	for (i = 0; i < t->o.nlibs; i++)
		if ((rc = trace_attach_path(t, t->o.libs[i])) < 0) {
			snprintf(err, errlen, "cannot attach to \"%s\"", t->o.libs[i]);
			return rc;
		}
	if (!t->o.nlibs)
		trace_attach_known_dirs(t);
	for (i = 0; i < t->o.npids; i++) {
		cw_kernel_probes_track(t->kp, t->o.pids[i]);
		trace_add_pending(t, t->o.pids[i]);
	}
	if (t->child > 0) {
		cw_kernel_probes_track(t->kp, (uint32_t)t->child);
		trace_add_pending(t, (uint32_t)t->child);
	}
	if (t->live && cw_live_start(t->live, why, sizeof(why))) {
		cw_debug("%s; library copies are found by the rescan only", why);
		cw_live_close(t->live, NULL);
		t->live = NULL;
	}
	return 0;
}

/* No cap configured: the smaller of a fixed size and a share of the free
 * space, measured now (docs/trace.md, "Size cap"); said once the session
 * has started (a failed start says only why). */
static void trace_default_cap(struct trace *t)
{
	t->cap_err = cw_trace_default_cap_for(t->o.db, &t->o.size_cap, &t->cap_free);
	t->cap_defaulted = 1;
}

static void say_default_cap(struct trace *t)
{
	char cap[32], avail[32];

	if (!t->cap_defaulted || t->o.json)
		return;
	cw_trace_format_bytes(t->o.size_cap, cap, sizeof(cap));
	cw_trace_format_bytes(t->cap_free, avail, sizeof(avail));
	if (t->cap_err)
		cw_trace_say(&t->o.say, "causeway: no size cap configured; the store is capped at %s (its free space "
					"is unknown: %s)\n", cap, strerror(-t->cap_err));
	else
		cw_trace_say(&t->o.say, "causeway: no size cap configured; the store is capped at %s (a quarter of the "
					"%s free on its filesystem, at most 1 GiB; --size-cap or store.max_size sets it)\n",
			     cap, avail);
}

static int step_writer(struct trace *t, char *err, size_t errlen)
{
	struct cw_writer_opts wo;
	int rc;

	trace_session_prepare(t);
	memset(&wo, 0, sizeof(wo));
	wo.node = t->o.node;
	wo.size_cap_bytes = (int64_t)t->o.size_cap;
	/* Batches end at the consumer's flushes (under a size cap also after
	 * a transaction's share of rows, store/footprint.h), each begun
	 * through trace_store_gate(): a lock another process takes between
	 * two batches holds records in memory instead of failing rows. */
	wo.immediate = 1;
	/* SQLite on a thread of its own: decoding goes on while it inserts. */
	wo.threaded = 1;
	wo.batch_rows = 1 << 30;
	if ((rc = cw_writer_new(&t->w, t->st, &wo))) {
		snprintf(err, errlen, "cannot write to \"%s\": %s", t->o.db, cw_store_strerror(rc));
		return rc < 0 ? rc : -EIO;
	}
	/* The consumer thread must never sleep in SQLite's busy handler while
	 * the rings fill: trace_store_gate() retries a held lock itself. */
	sqlite3_busy_timeout(t->st->db, 20);
	t->view_on = !t->o.json && !t->o.no_view;
	if ((t->view_on || !t->o.json) && cw_trace_view_new(&t->view))
		t->view = NULL;
	if (!t->view)
		t->view_on = 0;
	else
		cw_trace_view_set_hang_floor(t->view, t->o.hang_after_ns);
	return 0;
}

static int step_python(struct trace *t, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return trace_python_new(&t->py, t->cp, &t->cons, t->o.py_mode != CW_PY_OFF, t->o.json, &t->o.say);
}

static int step_pipeline(struct trace *t, char *err, size_t errlen)
{
	struct cw_pipeline_opts po;
	int rc;

	(void)err, (void)errlen;
	memset(&po, 0, sizeof(po));
	po.writer = t->w;
	po.mono_to_wall_ns = trace_measure_offset();
	t->fold_off = po.mono_to_wall_ns;
	po.observer = trace_observe;
	po.offcpu_observer = trace_observe_offcpu;
	po.observer_ctx = t;
	po.py = trace_python_resolver(t->py);
	po.sym = trace_python_symbolizer(t->py);
	if ((rc = cw_pipeline_new(&t->pipe, &po)))
		return rc;
	cw_consumer_init(&t->cons, t->pipe);
	t->cons.tap = trace_tap;
	t->cons.tap_ctx = t;
	t->cons.gate = trace_store_gate;
	t->cons.gate_ctx = t;
	t->cons.spool_cap = (size_t)t->o.lock_buffer;
	/* The session row now, when the store takes it. */
	cw_consumer_lock(&t->cons);
	cw_consumer_store_ready(&t->cons);
	cw_consumer_unlock(&t->cons);
	return 0;
}

/* After the pipeline: a server found at once is enrolled like a --pid. */
static int step_inference(struct trace *t, char *err, size_t errlen)
{
	if (!t->o.inference)
		return 0;
	return trace_inference_start(&t->inf, t, t->o.inference, err, errlen);
}

static int step_rings(struct trace *t, char *err, size_t errlen)
{
	int rc;

	(void)err, (void)errlen;
	if ((rc = cw_kernel_probes_add_rings(t->kp, &t->rb, cw_consumer_sample, &t->cons)) < 0 ||
	    (rc = cw_cuda_probes_add_ring(t->cp, &t->rb, cw_consumer_sample, &t->cons)) < 0 ||
	    (t->inf && (rc = trace_inference_add_ring(t->inf, &t->rb, cw_consumer_sample, &t->cons)) < 0) ||
	    (rc = cw_consumer_start(&t->cons, t->rb)))
		return rc < 0 ? rc : -EIO;
	if (cw_sysinfo_new(&t->si, NULL))
		t->si = NULL;
	return 0;
}

static int step_bpf_stats(struct trace *t, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	if (t->o.bpf_stats && (t->stats_fd = cw_prog_stats_enable()) < 0)
		return t->stats_fd;
	return 0;
}

/* /metrics and OTLP read the session's live figures. */
static int step_metrics(struct trace *t, char *err, size_t errlen)
{
	int rc = cw_live_metrics_new(&t->metrics, 0);

	(void)err, (void)errlen;
	return rc < 0 ? rc : rc ? -ENOMEM : 0;
}

static int step_otlp(struct trace *t, char *err, size_t errlen)
{
	const struct cw_trace_hooks *h = t->hooks;
	int rc;

	(void)err, (void)errlen;
	if (h && h->otlp_start && (rc = h->otlp_start(h->ctx, t->metrics, &t->otlp))) {
		t->hook_exit = rc;
		return -ECANCELED;
	}
	if (!t->otlp && !t->o.serve) { /* nobody reads them: no cost per row */
		cw_live_metrics_free(t->metrics);
		t->metrics = NULL;
	}
	return 0;
}

static int step_gpu(struct trace *t, char *err, size_t errlen)
{
	struct trace_gpu_opts go = {
		.interval_ns = t->o.gpu_interval_ns,
		.nvml_path = t->o.nvml_path,
		.no_gpu = t->o.no_gpu,
		.stall_floor_ns = t->o.stall_after_ns,
		.summary = t->o.capture_summary,
		.quiet = t->view_on,
		.say = &t->o.say,
		.open_calls = trace_open_calls,
		.open_calls_ctx = t,
	};

	struct trace_ras_opts ro = { .hang_after_ns = t->o.hang_after_ns };
	int ret;

	(void)err, (void)errlen;
	ret = trace_gpu_start(&t->gpu, &go, &t->cons, t->w, t->st, t->o.node, t->session_id, t->view);
	/* The job's NCCL RAS service, asked once at a hang (ras.h); the
	 * address was checked with the options. */
	if (!ret && t->o.nccl_ras && trace_ras_parse_addr(t->o.nccl_ras, &ro))
		return -EINVAL;
	return ret ? ret : trace_ras_start(&t->ras, &ro, t->w);
}

/* The API reads the file on its own read-only connections while the
 * writer appends (WAL). */
static int step_serve(struct trace *t, char *err, size_t errlen)
{
	const struct cw_trace_hooks *h = t->hooks;
	int rc;

	(void)err, (void)errlen;
	if (!t->o.serve || !h || !h->serve_start)
		return 0;
	if ((rc = h->serve_start(h->ctx, t->metrics))) {
		t->hook_exit = rc;
		return -ECANCELED;
	}
	t->serving = 1;
	return 0;
}

static int step_writer_lag(struct trace *t, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	if (!t->serving)
		return 0;
	if (cw_writer_lag_new(&t->wlag, trace_writer_commits, t))
		return -ENOMEM;
	if (t->hooks->serve_lag)
		t->hooks->serve_lag(t->hooks->ctx, t->wlag);
	return 0;
}

static int step_resolver(struct trace *t, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	trace_rescan(t);
	trace_tenant_set_metrics(t->tenant, t->metrics);
	return trace_tenant_start(t->tenant, &t->cons, t->w, t->o.kubelet_url);
}

const struct trace_step trace_start_steps[] = {
	{ CW_TRACE_PRIVILEGE, NULL, 0, step_privilege },
	{ CW_TRACE_BTF, NULL, 0, step_btf },
	{ CW_TRACE_PIDS, NULL, 0, step_pids },
	{ CW_TRACE_LIBS, NULL, 0, step_libs },
	{ CW_TRACE_STORE, NULL, 0, step_store },
	{ CW_TRACE_SPAWN, NULL, 0, step_spawn },
	{ CW_TRACE_KERNEL_PROBES, NULL, 0, step_kernel_probes },
	{ CW_TRACE_CUDA_PROBES, NULL, 0, step_cuda_probes },
	{ CW_TRACE_TENANT, NULL, 0, step_tenant },
	{ CW_TRACE_ATTACH, NULL, 0, step_attach },
	{ CW_TRACE_WRITER, NULL, 0, step_writer },
	{ CW_TRACE_PYTHON, "cannot set up Python stack capture", 1, step_python },
	{ CW_TRACE_PIPELINE, "cannot start the pipeline", 1, step_pipeline },
	{ CW_TRACE_INFERENCE, NULL, 0, step_inference },
	{ CW_TRACE_RINGS, "cannot read the ring buffers", 0, step_rings },
	{ CW_TRACE_BPF_STATS, "trace: cannot enable BPF statistics", 1, step_bpf_stats },
	{ CW_TRACE_METRICS, "out of memory", 0, step_metrics },
	{ CW_TRACE_OTLP, NULL, 0, step_otlp },
	{ CW_TRACE_GPU, "cannot start GPU telemetry", 1, step_gpu },
	{ CW_TRACE_SERVE, NULL, 0, step_serve },
	{ CW_TRACE_WRITER_LAG, "out of memory", 0, step_writer_lag },
	{ CW_TRACE_RESOLVER, "cannot start the cgroup resolver", 1, step_resolver },
};
const int trace_nstart_steps = sizeof(trace_start_steps) / sizeof(trace_start_steps[0]);

/* After the steps: the first rescan is done, the launched command may run. */
void trace_started(struct trace *t)
{
	uint64_t attach_ns = cw_monotonic_ns() - t->start_ns;

	t->started = 1;
	t->traced_from_ns = cw_monotonic_ns();
	cw_consumer_lock(&t->cons);
	cw_writer_counter_set(t->w, "trace.startup_ms", attach_ns / 1000000);
	cw_consumer_unlock(&t->cons);
	if (!t->o.json)
		cw_trace_say(&t->o.say, "causeway: tracing %s: %d libraries, %d probes attached in %.0f ms (%s); "
					"recording to \"%s\"\n",
			     t->o.command ? t->o.command[0] : t->o.npids ? "the named processes" : "every CUDA process",
			     cw_cuda_probes_nlibs(t->cp), cw_cuda_probes_npairs(t->cp), attach_ns / 1e6,
			     cw_cuda_probes_kind(t->cp), t->o.db);
	trace_say_fallbacks(t);
	say_default_cap(t);
	if (t->gate_fd >= 0) {
		if (write(t->gate_fd, "g", 1) != 1)
			cw_debug("gate write failed");
		close(t->gate_fd);
		t->gate_fd = -1;
	}
}
