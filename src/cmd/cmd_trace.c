/* causeway trace: attach the CUDA/NCCL uprobes and the kernel tracepoints,
 * record into the store, show a live view (docs/trace.md). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf/events.h"
#include "cmd/cmd.h"
#include "cmd/trace_view.h"
#include "config/config.h"
#include "loader/discover.h"
#include "loader/kernel_probes.h"
#include "loader/live_discover.h"
#include "loader/ringbuf.h"
#include "loader/session.h"
#include "loader/sysinfo.h"
#include "loader/uprobe_attach.h"
#include "pipeline/ops.h"
#include "pipeline/pipeline.h"
#include "cmd/serve_setup.h"
#include "cmd/trace_python.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_PIDS 4096
#define MAX_LIBS 32

static const char usage_text[] =
	"usage: causeway trace [options] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Traces the CUDA runtime, CUDA driver and NCCL (uprobes) and the scheduler,\n"
	"block I/O, memory, TCP and process lifecycle (tracepoints) of every CUDA\n"
	"process on the host, the processes named with --pid, or COMMAND, which it\n"
	"launches, traces from its first instruction, and whose exit status it\n"
	"returns. Needs root. Ctrl-C stops and flushes.\n"
	"\n"
	"options:\n"
	"  --pid P[,P...]     trace these processes (and their children) only\n"
	"  --cuda-lib PATH    attach to this library copy only (repeatable)\n"
	"  --db PATH          database to record into (default ./causeway.db)\n"
	"  --duration D       stop after D (\"30s\", \"5m\")\n"
	"  --node NAME        node name stored with every row (default: hostname)\n"
	"  --size-cap SIZE    prune the oldest rows above SIZE (\"2GiB\")\n"
	"  --ring-kb N        size of each ring buffer in KiB (default 8192 calls, 4096 kernel)\n"
	"  --agg-pct N        above N % ring fill, count calls in the kernel instead of\n"
	"                     emitting them (default 75; 0 disables)\n"
	"  --py-stacks MODE   Python stacks of CPython 3.10-3.13 processes: slow (the\n"
	"                     default: calls slower than 3x their op's mean and 10 us,\n"
	"                     captured at return), all (every call), off\n"
	"  --native-stacks    also capture each call's native stack (frame pointers)\n"
	"  --hang-after D     the live view warns of an NCCL hang when a collective has\n"
	"                     waited for some processes max(20 steps, D) (default 10s)\n"
	"  --no-hold          never stop a process that loads a library copy not yet\n"
	"                     attached (by default it is stopped until its probes are\n"
	"                     in place, so its first calls are recorded)\n"
	"  --serve ADDR:PORT  while tracing, serve the read-only HTTPS API of `causeway\n"
	"                     serve` over the database being written (TLS, client CA\n"
	"                     and token from the config's server.* keys or $CW_TOKEN)\n"
	"  --json             stream the recorded events as NDJSON on stdout\n"
	"  --no-view          no live view (default when stdout is not a terminal)\n"
	"  -h, --help         this help\n"
	"\n"
	"exit status: the command's when one was launched; 3 not root, 4 no BTF,\n"
	"5 unknown pid or a library without the hooked symbols, 6 database error.\n";

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct trace_opts {
	uint32_t pids[64];
	int npids;
	const char *libs[MAX_LIBS];
	int nlibs;
	const char *db;
	uint64_t duration_ns;
	uint64_t hang_after_ns;
	uint64_t size_cap;
	unsigned ring_kb, agg_pct;
	int json, no_view;
	int py_mode, native_stacks; /* enum cw_py_mode */
	int no_hold;
	const char *serve; /* --serve ADDR:PORT */
	char **command;
};

struct trace {
	struct trace_opts o;
	struct cw_store *st;
	struct cw_writer *w;
	struct cw_pipeline *pipe;
	int64_t session_id;
	struct cw_kernel_probes *kp;
	struct cw_cuda_probes *cp;
	struct cw_live_discover *live; /* NULL: the rescan alone finds copies */
	pthread_mutex_t attach_lock;   /* cp's attach: main and discovery threads */
	int started;                   /* the first rescan is done */
	uint64_t rescan_late;          /* copies the rescan found before discovery */
	int live_was_on;
	struct cw_live_stats live_last; /* at live_stop() */
	struct ring_buffer *rb;
	struct cw_consumer cons;
	struct cw_trace_view *view;
	struct cw_sysinfo *si;
	struct trace_python *py;
	struct serve_setup ss;
	struct cw_server *srv;
	int view_on;
	/* Processes with a process row; guarded by the consumer lock. */
	uint32_t known[MAX_PIDS];
	int nknown;
	uint32_t pending[256];
	int npending;
	uint64_t pending_lost;
	uint64_t entries; /* call entries received */
	uint64_t json_write_errors;
	char cuda_version[64], driver_version[64], python_version[16];
	pid_t child;
};

static int is_known(const struct trace *t, uint32_t pid)
{
	int i;

	for (i = 0; i < t->nknown; i++)
		if (t->known[i] == pid)
			return 1;
	return 0;
}

static void add_pending(struct trace *t, uint32_t pid)
{
	int i;

	if (!pid || is_known(t, pid))
		return;
	for (i = 0; i < t->npending; i++)
		if (t->pending[i] == pid)
			return;
	if (t->npending < (int)(sizeof(t->pending) / sizeof(t->pending[0])))
		t->pending[t->npending++] = pid;
	else
		t->pending_lost++;
}

/* An exec of python3 -> python3.X (pyenv and distributions install the
 * versioned binary and symlink the short names to it). */
static void python_from_exec(struct trace *t, const struct cw_proc *p)
{
	char fn[CW_PATH_LEN + 1], real[PATH_MAX];
	const char *b;
	int minor;

	memcpy(fn, p->filename, CW_PATH_LEN);
	fn[CW_PATH_LEN] = '\0';
	if (!realpath(fn, real))
		return;
	b = strrchr(real, '/');
	b = b ? b + 1 : real;
	if (sscanf(b, "python3.%d", &minor) == 1)
		snprintf(t->python_version, sizeof(t->python_version), "3.%d", minor);
}

/* Consumer thread, lock held: lifecycle records of traced processes. A
 * forked Python child (multiprocessing, DataLoader workers) is Python at
 * once; an exec'd one after its interpreter starts: both are (re)tried. */
static void on_proc(struct trace *t, const struct cw_proc *p)
{
	switch (p->hdr.op) {
	case CW_OP_fork:
		add_pending(t, p->child_pid);
		if (t->py)
			trace_python_enroll(t->py, p->child_pid);
		break;
	case CW_OP_exec:
		if (!t->python_version[0])
			python_from_exec(t, p);
		if (t->py)
			trace_python_enroll(t->py, p->hdr.pid);
		break;
	case CW_OP_exit:
		if (t->py)
			trace_python_exited(t->py, p->child_pid);
		break;
	default:
		break;
	}
}

/* Consumer thread, lock held: every raw record. */
static void tap(void *ctx, const void *data, size_t size)
{
	struct trace *t = ctx;
	const struct cw_hdr *h = data;

	if (size < sizeof(*h))
		return;
	if (t->view)
		cw_trace_view_record(t->view, data, size);
	if (h->type == CW_REC_CALL || h->type == CW_REC_CALL_ENTRY) {
		t->entries++;
		add_pending(t, h->pid);
	}
	else if (h->type == CW_REC_PROC && size >= sizeof(struct cw_proc))
		on_proc(t, (const struct cw_proc *)data);
}

/* Consumer thread, lock held: every stored row. */
static void observe(void *ctx, const struct cw_event_row *r)
{
	struct trace *t = ctx;

	if (t->view)
		cw_trace_view_observe(t->view, r);
	if (t->o.json) {
		json_t *o = json_pack("{s:I,s:I,s:I,s:i,s:i,s:s,s:s,s:s}", "wall_ns", (json_int_t)r->wall_ns,
				      "mono_ns", (json_int_t)r->mono_ns, "duration_ns", (json_int_t)r->duration_ns,
				      "pid", (int)r->pid, "tid", (int)r->tid, "comm", r->comm ? r->comm : "",
				      "source", r->source ? r->source : "", "op", r->op ? r->op : "");
		char *s;
		int i;

		if (!o)
			return;
		if (r->nargs > 0) {
			json_t *a = json_array();

			for (i = 0; i < r->nargs && i < 4; i++)
				json_array_append_new(a, json_integer(r->args[i]));
			json_object_set_new(o, "args", a);
		}
		if (r->has_ret)
			json_object_set_new(o, "ret", json_integer(r->ret));
		if (r->has_bytes)
			json_object_set_new(o, "bytes", json_integer(r->bytes));
		if (r->device >= 0)
			json_object_set_new(o, "device", json_integer(r->device));
		if (r->detail)
			json_object_set_new(o, "detail", json_string(r->detail));
		s = json_dumps(o, JSON_COMPACT);
		if (s) {
			/* One write() per line: a launched command shares stdout,
			 * and its output must not split an event line. */
			size_t len = strlen(s);
			char *line = realloc(s, len + 2);

			if (line) {
				s = line;
				s[len] = '\n';
				if (write(STDOUT_FILENO, s, len + 1) < 0)
					t->json_write_errors++;
			}
			free(s);
		}
		json_decref(o);
	}
}

static int parse_pids(struct trace_opts *o, const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int rc = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || !v || v > 0x7fffffff || o->npids == 64) {
			rc = -EINVAL;
			break;
		}
		o->pids[o->npids++] = (uint32_t)v;
	}
	free(dup);
	return o->npids ? rc : -EINVAL;
}

static int parse_args(struct trace_opts *o, int argc, char **argv, int *json_out)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->agg_pct = 75;
	o->py_mode = CW_PY_SLOW;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			*json_out = 1;
		else if (!strcmp(argv[i], "--"))
			break;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = !strcmp(a, "--pid") || !strcmp(a, "--cuda-lib") || !strcmp(a, "--db") ||
			    !strcmp(a, "--duration") || !strcmp(a, "--node") || !strcmp(a, "--size-cap") ||
			    !strcmp(a, "--ring-kb") || !strcmp(a, "--agg-pct") || !strcmp(a, "--py-stacks") ||
			    !strcmp(a, "--serve") || !strcmp(a, "--hang-after");

		if (!strcmp(a, "--")) {
			if (i + 1 >= argc) {
				cw_report_error(*json_out, "trace: \"--\" must be followed by a command");
				return CW_EXIT_USAGE;
			}
			o->command = argv + i + 1;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return -1;
		}
		if (!strcmp(a, "--json")) {
			o->json = 1;
			continue;
		}
		if (!strcmp(a, "--no-view")) {
			o->no_view = 1;
			continue;
		}
		if (!strcmp(a, "--native-stacks")) {
			o->native_stacks = 1;
			continue;
		}
		if (!strcmp(a, "--no-hold")) {
			o->no_hold = 1;
			continue;
		}
		if (!takes) {
			cw_report_error(*json_out, "trace: unknown option \"%s\"; see 'causeway trace --help'", a);
			return CW_EXIT_USAGE;
		}
		if (!v) {
			cw_report_error(*json_out, "trace: %s needs a value", a);
			return CW_EXIT_USAGE;
		}
		i++;
		if (!strcmp(a, "--pid")) {
			if (parse_pids(o, v)) {
				cw_report_error(*json_out, "trace: bad --pid \"%s\" (want P[,P...])", v);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--cuda-lib")) {
			if (o->nlibs == MAX_LIBS) {
				cw_report_error(*json_out, "trace: at most %d --cuda-lib", MAX_LIBS);
				return CW_EXIT_USAGE;
			}
			o->libs[o->nlibs++] = v;
		} else if (!strcmp(a, "--db")) {
			o->db = v;
		} else if (!strcmp(a, "--hang-after")) {
			if (cw_parse_duration(v, &o->hang_after_ns) || !o->hang_after_ns) {
				cw_report_error(*json_out, "trace: bad --hang-after \"%s\"", v);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--duration")) {
			if (cw_parse_duration(v, &o->duration_ns) || !o->duration_ns) {
				cw_report_error(*json_out, "trace: bad --duration \"%s\"", v);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--node")) {
			if (!cw_node_name_valid(v)) {
				cw_report_error(*json_out, "trace: bad --node \"%s\" (1-63 of A-Z a-z 0-9 . _ -)", v);
				return CW_EXIT_USAGE;
			}
			cw_global_node = v;
		} else if (!strcmp(a, "--serve")) {
			o->serve = v;
		} else if (!strcmp(a, "--py-stacks")) {
			if (!strcmp(v, "slow"))
				o->py_mode = CW_PY_SLOW;
			else if (!strcmp(v, "all"))
				o->py_mode = CW_PY_ALL;
			else if (!strcmp(v, "off"))
				o->py_mode = CW_PY_OFF;
			else {
				cw_report_error(*json_out, "trace: bad --py-stacks \"%s\" (slow, all or off)", v);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--size-cap")) {
			if (cw_parse_size(v, &o->size_cap) || !o->size_cap) {
				cw_report_error(*json_out, "trace: bad --size-cap \"%s\"", v);
				return CW_EXIT_USAGE;
			}
		} else {
			char *end;
			unsigned long n = strtoul(v, &end, 10);
			int ring = !strcmp(a, "--ring-kb");

			if (*end || !*v || (ring && (n < 4 || n > (1ul << 20))) || (!ring && n > 100)) {
				cw_report_error(*json_out, "trace: bad %s \"%s\"", a, v);
				return CW_EXIT_USAGE;
			}
			if (ring)
				o->ring_kb = (unsigned)n;
			else
				o->agg_pct = (unsigned)n;
		}
	}
	return 0;
}

/* Where CUDA libraries live when no process has mapped them yet: the
 * toolkit prefixes and the distribution's library directories (the
 * driver's libcuda.so.1). Attaching there first is what lets a launched
 * command be traced from its first call. */
static const char *const lib_dirs[] = {
	"/usr/local/cuda*/lib64", "/usr/local/cuda*/lib", "/usr/local/cuda*/lib/stubs",
	"/usr/local/cuda*/targets/*/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib",
	NULL,
};

static void note_version(struct trace *t, const char *path)
{
	int k = cw_lib_kind_of(path);

	if (k == CW_LIB_CUDART && !t->cuda_version[0]) {
		char real[PATH_MAX];
		const char *p;

		cw_lib_version(path, t->cuda_version, sizeof(t->cuda_version));
		/* CUDA 13 ships libcudart.so.13 without the minor in the file
		 * name; the toolkit prefix (cuda-13.0) has it. */
		if (!strchr(t->cuda_version, '.') && realpath(path, real) && (p = strstr(real, "/cuda-")) &&
		    p[6] >= '0' && p[6] <= '9')
			snprintf(t->cuda_version, sizeof(t->cuda_version), "%.*s", (int)strcspn(p + 6, "/"), p + 6);
	}
	else if (k == CW_LIB_CUDA && !t->driver_version[0])
		cw_lib_version(path, t->driver_version, sizeof(t->driver_version));
}

/* Main thread (rescan) and discovery thread. */
static int attach_path(struct trace *t, const char *path)
{
	char err[512];
	struct cw_attach_report rep;
	int rc;

	pthread_mutex_lock(&t->attach_lock);
	rc = cw_cuda_probes_attach(t->cp, path, &rep, err, sizeof(err));
	if (rc >= 0)
		cw_live_mark_path(t->live, path);
	if (rc > 0) {
		note_version(t, path);
		cw_debug("attached %d probes in %.1f ms to \"%s\"", rc, rep.ns / 1e6, path);
	} else if (rc < 0 && rc != -ENOENT) {
		cw_debug("%s", err);
	}
	pthread_mutex_unlock(&t->attach_lock);
	return rc;
}

/* Discovery thread: a copy a process has just mapped. */
static int live_attach(void *ctx, const struct cw_lib_copy *lib)
{
	return attach_path(ctx, lib->path);
}

static void attach_known_dirs(struct trace *t)
{
	int i;

	for (i = 0; lib_dirs[i]; i++) {
		glob_t g;
		size_t j;

		if (glob(lib_dirs[i], GLOB_ONLYDIR, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc; j++) {
			DIR *d = opendir(g.gl_pathv[j]);
			struct dirent *e;

			if (!d)
				continue;
			while ((e = readdir(d))) {
				char p[PATH_MAX];
				struct stat st;

				if (cw_lib_kind_of(e->d_name) < 0)
					continue;
				snprintf(p, sizeof(p), "%s/%s", g.gl_pathv[j], e->d_name);
				if (!stat(p, &st) && S_ISREG(st.st_mode))
					attach_path(t, p);
			}
			closedir(d);
		}
		globfree(&g);
	}
}

struct scan_ctx {
	struct trace *t;
	uint32_t pids[MAX_PIDS];
	int npids;
};

static int on_lib(void *ctx, const struct cw_lib_copy *lib)
{
	struct scan_ctx *sc = ctx;
	struct trace *t = sc->t;
	int i;

	/* A copy first attached here, after start, while its process runs:
	 * discovery did not see it load (no hook on its loader, --no-hold,
	 * or a lost report), so calls made before now are not recorded. */
	if (attach_path(t, lib->path) > 0 && t->started && !cw_live_is_held(t->live, lib->pid)) {
		cw_debug("\"%s\" of pid %u attached by the rescan, after it was mapped", lib->path, lib->pid);
		t->rescan_late++;
	}
	cw_live_mark(t->live, cw_kdev(lib->dev), lib->ino);
	for (i = 0; i < sc->npids; i++)
		if (sc->pids[i] == lib->pid)
			return 0;
	if (sc->npids < MAX_PIDS)
		sc->pids[sc->npids++] = lib->pid;
	return 0;
}

static void write_process(struct trace *t, uint32_t pid)
{
	struct cw_process_row row;
	char comm[64], cmdline[1024], py[16];

	memset(&row, 0, sizeof(row));
	if (cw_proc_identity(pid, comm, sizeof(comm), cmdline, sizeof(cmdline), &row.ppid))
		return;
	row.pid = pid;
	row.comm = comm;
	row.cmdline = cmdline;
	cw_proc_ranks(pid, &row.rank, &row.local_rank, &row.world_size);
	row.start_wall_ns = cw_realtime_ns();
	if (!t->python_version[0] && !cw_proc_python_version(pid, py, sizeof(py)))
		snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	cw_writer_process(t->w, &row);
}

/* Every second: find library copies and processes, enroll new pids. */
static void rescan(struct trace *t)
{
	struct scan_ctx *sc = calloc(1, sizeof(*sc));
	uint32_t fresh[MAX_PIDS];
	int nfresh = 0, i;

	if (!sc)
		return;
	sc->t = t;
	if (t->o.nlibs == 0) {
		if (!t->o.npids && !t->o.command) {
			cw_discover_all(on_lib, sc);
		} else {
			/* Named processes and their (kernel-tracked) children:
			 * libraries they dlopen'ed since the last scan. The
			 * pending ones too: at start the named pids are only
			 * pending, and their libraries must be attached before
			 * trace says it is tracing. */
			cw_consumer_lock(&t->cons);
			for (i = 0; i < t->nknown && sc->npids < MAX_PIDS; i++)
				sc->pids[sc->npids++] = t->known[i];
			for (i = 0; i < t->npending && sc->npids < MAX_PIDS; i++)
				if (!is_known(t, t->pending[i]))
					sc->pids[sc->npids++] = t->pending[i];
			cw_consumer_unlock(&t->cons);
			for (i = 0; i < sc->npids; i++)
				cw_discover_pid(sc->pids[i], on_lib, sc);
		}
	}
	cw_consumer_lock(&t->cons);
	if (!t->o.npids && !t->o.command)
		for (i = 0; i < sc->npids; i++)
			add_pending(t, sc->pids[i]);
	for (i = 0; i < t->npending; i++)
		if (t->nknown < MAX_PIDS && !is_known(t, t->pending[i])) {
			t->known[t->nknown++] = t->pending[i];
			fresh[nfresh++] = t->pending[i];
		}
	t->npending = 0;
	for (i = 0; i < nfresh; i++) {
		if (!cw_kernel_probes_is_tracked(t->kp, fresh[i]))
			cw_kernel_probes_track(t->kp, fresh[i]);
		write_process(t, fresh[i]);
		if (t->py)
			trace_python_enroll(t->py, fresh[i]);
	}
	nfresh = 0;
	for (i = 0; !t->python_version[0] && i < t->nknown && nfresh < 16; i++)
		fresh[nfresh++] = t->known[i];
	cw_consumer_unlock(&t->cons);
	/* A launched command runs python only after exec: look again until
	 * one traced process turns out to be CPython. */
	for (i = 0; i < nfresh && !t->python_version[0]; i++) {
		char py[16];

		if (!cw_proc_python_version(fresh[i], py, sizeof(py)))
			snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	}
	free(sc);
}

static int64_t measure_offset(void)
{
	uint64_t m0 = cw_monotonic_ns(), r = cw_realtime_ns(), m1 = cw_monotonic_ns();

	return (int64_t)r - (int64_t)(m0 + (m1 - m0) / 2);
}

struct loss_totals {
	uint64_t ring_drops, aggregated, pipeline;
	uint64_t held, late; /* discovery: processes stopped, copies attached late */
};

/* Lock held. Library discovery (docs/trace.md, "Discovery"). */
static void store_discovery(struct trace *t, struct loss_totals *lt)
{
	struct cw_live_stats ls;

	if (t->live)
		cw_live_get_stats(t->live, &ls);
	else
		ls = t->live_last;
	cw_writer_counter_set(t->w, "trace.discovery.live", t->live || t->live_was_on);
	cw_writer_counter_set(t->w, "trace.discovery.loads", ls.loads);
	cw_writer_counter_set(t->w, "trace.discovery.execs", ls.execs);
	cw_writer_counter_set(t->w, "trace.discovery.reports", ls.events);
	cw_writer_counter_set(t->w, "trace.discovery.held", ls.held);
	cw_writer_counter_set(t->w, "trace.discovery.hold_map_full", ls.hold_full);
	cw_writer_counter_set(t->w, "trace.discovery.ring_dropped", ls.ring_dropped);
	cw_writer_counter_set(t->w, "trace.discovery.swept", ls.swept);
	cw_writer_counter_set(t->w, "trace.discovery.attached", ls.attached);
	cw_writer_counter_set(t->w, "trace.discovery.loaders", ls.loaders);
	cw_writer_counter_set(t->w, "trace.discovery.attach_us_p50", ls.lat_p50_us);
	cw_writer_counter_set(t->w, "trace.discovery.attach_us_max", ls.lat_max_us);
	cw_writer_counter_set(t->w, "trace.discovery.attach_n", ls.lat_n);
	/* Copies attached after their process had run on with them mapped:
	 * each is a window in which calls may have been missed. */
	cw_writer_counter_set(t->w, "trace.discovery.late", ls.late + t->rescan_late);
	lt->held = ls.held;
	lt->late = ls.late + t->rescan_late;
}

/* Lock held. Stores every loss counter of this session. */
static void store_counters(struct trace *t, struct loss_totals *lt)
{
	static const char *const cs_names[CW_CS_MAX] = {
		NULL, NULL, "trace.cuda.dropped", "trace.cuda.return_orphaned",
		"trace.cuda.aggregated", "trace.cuda.kernel_name_dropped", "trace.cuda.state_map_full", NULL,
	};
	struct cw_kernel_drop_counts kd;
	struct cw_pipeline_counters pc;
	uint64_t cs[CW_CS_MAX];
	char name[96];
	unsigned i;

	memset(lt, 0, sizeof(*lt));
	if (!cw_kernel_probes_drops(t->kp, &kd)) {
		for (i = 0; i < CW_DROP_MAX; i++)
			if (cw_kernel_drop_name(i)) {
				snprintf(name, sizeof(name), "trace.ring_drops.%s", cw_kernel_drop_name(i));
				cw_writer_counter_set(t->w, name, kd.drops[i]);
			}
		for (i = 0; i < CW_STAT_MAX; i++)
			if (cw_kernel_stat_name(i)) {
				snprintf(name, sizeof(name), "trace.kernel.%s", cw_kernel_stat_name(i));
				cw_writer_counter_set(t->w, name, kd.stats[i]);
			}
		lt->ring_drops = kd.total_drops;
	}
	if (!cw_cuda_probes_stats(t->cp, cs)) {
		for (i = 0; i < CW_CS_MAX; i++)
			if (cs_names[i])
				cw_writer_counter_set(t->w, cs_names[i], cs[i]);
		lt->aggregated = cs[CW_CS_AGGREGATED];
		/* Every call the probes saw: received here (returned, or still
		 * open and handed over by take_inflight), lost, or counted in
		 * the kernel. */
		cw_writer_counter_set(t->w, "trace.cuda.emitted", t->entries);
		cw_writer_counter_set(t->w, "trace.cuda.calls",
				      t->entries + cs[CW_CS_DROPPED] + cs[CW_CS_STATE_FULL] + cs[CW_CS_AGGREGATED]);
	}
	if (lt->aggregated)
		for (i = 1; i < CW_OP_MAX; i++) {
			struct cw_cuda_agg a;
			const char *op = cw_op_name(i);

			if (!op || cw_cuda_probes_agg(t->cp, i, &a) || !a.count)
				continue;
			snprintf(name, sizeof(name), "trace.aggregated.%s.count", op);
			cw_writer_counter_set(t->w, name, a.count);
			snprintf(name, sizeof(name), "trace.aggregated.%s.sum_ns", op);
			cw_writer_counter_set(t->w, name, a.sum_ns);
			snprintf(name, sizeof(name), "trace.aggregated.%s.max_ns", op);
			cw_writer_counter_set(t->w, name, a.max_ns);
			if (t->view)
				cw_trace_view_set_aggregated(t->view, cw_source_name(cw_op_source(i)), op, a.count);
		}
	cw_writer_counter_set(t->w, "trace.consumer.rejected", t->cons.rejected);
	cw_writer_counter_set(t->w, "trace.kernel_names_unresolved", t->cons.names_unresolved);
	cw_writer_counter_set(t->w, "trace.json_write_errors", t->json_write_errors);
	cw_writer_counter_set(t->w, "trace.pids_untracked", t->pending_lost);
	if (t->py) {
		struct trace_python_stats ps;

		trace_python_get_stats(t->py, &ps);
		cw_writer_counter_set(t->w, "trace.py_processes", ps.attached);
		cw_writer_counter_set(t->w, "trace.py_unsupported", ps.unsupported);
		cw_writer_counter_set(t->w, "trace.py_threads", ps.threads);
	}
	store_discovery(t, lt);
	cw_writer_counter_set(t->w, "trace.libraries", (uint64_t)cw_cuda_probes_nlibs(t->cp));
	cw_writer_counter_set(t->w, "trace.probes", (uint64_t)cw_cuda_probes_npairs(t->cp));
	cw_pipeline_get_counters(t->pipe, &pc);
	lt->pipeline = pc.rejected_size + pc.rejected_version + pc.rejected_type + pc.unpaired_returns +
		       pc.unfinished_entries + pc.overflow_entries + pc.write_errors;
}

static void feed_inflight(void *ctx, const struct cw_call_entry *e)
{
	struct trace *t = ctx;

	cw_consumer_feed(&t->cons, e, sizeof(*e));
}

/* Calls open in the kernel since before cutoff become entries in the
 * pipeline, which stores them as unfinished when they stay open past the
 * consumer's max_open_ns or at the end. */
static void take_inflight(struct trace *t, uint64_t cutoff_mono_ns)
{
	if (t->cp)
		cw_cuda_probes_take_inflight(t->cp, cutoff_mono_ns, feed_inflight, t);
}

static void tick(struct trace *t, uint64_t start_ns)
{
	struct cw_snapshot snap;
	struct loss_totals lt;
	uint64_t now = cw_monotonic_ns();

	rescan(t);
	if (now > t->cons.max_open_ns)
		take_inflight(t, now - t->cons.max_open_ns);
	if (t->si && !cw_sysinfo_sample(t->si, &snap))
		cw_consumer_feed(&t->cons, &snap, sizeof(snap));
	cw_consumer_lock(&t->cons);
	cw_pipeline_set_clock(t->pipe, measure_offset());
	trace_python_forget_exited(t->py, cw_monotonic_ns());
	cw_kernel_probes_flush(t->kp, 0);
	store_counters(t, &lt);
	if (t->view_on) {
		struct cw_trace_view_status vs = {
			.elapsed_ns = cw_monotonic_ns() - start_ns,
			.nprocs = t->nknown,
			.nlibs = cw_cuda_probes_nlibs(t->cp),
			.nprobes = cw_cuda_probes_npairs(t->cp),
			.ring_drops = lt.ring_drops,
			.aggregated = lt.aggregated,
			.pipeline_losses = lt.pipeline,
			.db = t->o.db,
		};

		cw_trace_view_render(t->view, stdout, &vs, 1);
	}
	cw_consumer_unlock(&t->cons);
}

/* Forks the command stopped before exec: it waits on a pipe until the
 * probes are attached and its pid is tracked. Returns the write end. */
static int spawn_command(struct trace *t, char **cmd, int *gate)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		char c;

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(126);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "causeway: cannot run \"%s\": %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	t->child = pid;
	*gate = p[1];
	return 0;
}

static int any_alive(const struct trace *t)
{
	int i;

	for (i = 0; i < t->o.npids; i++)
		if (cw_pid_exists(t->o.pids[i]))
			return 1;
	return 0;
}

static void session_begin(struct trace *t, uint64_t start_wall)
{
	struct cw_host_facts hf;
	struct cw_session_info si;
	char cmd[1024] = "";
	int i;

	cw_host_facts_read(&hf);
	for (i = 0; t->o.command && t->o.command[i]; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s", i ? " " : "", t->o.command[i]);
	memset(&si, 0, sizeof(si));
	si.node = cw_default_node();
	si.kind = "trace";
	si.started_wall_ns = start_wall;
	si.mono_to_wall_ns = measure_offset();
	si.host = hf.host;
	si.kernel = hf.kernel;
	si.gpu = hf.gpu[0] ? hf.gpu : NULL;
	si.driver = hf.driver[0] ? hf.driver : (t->driver_version[0] ? t->driver_version : NULL);
	si.cuda = t->cuda_version[0] ? t->cuda_version : NULL;
	si.python = t->python_version[0] ? t->python_version : NULL;
	si.command = cmd[0] ? cmd : NULL;
	si.rank = si.local_rank = si.world_size = -1;
	if (t->o.command == NULL && t->o.npids)
		cw_proc_ranks(t->o.pids[0], &si.rank, &si.local_rank, &si.world_size);
	if (t->o.npids && !t->python_version[0]) {
		char py[16];

		if (!cw_proc_python_version(t->o.pids[0], py, sizeof(py)))
			si.python = py, snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	}
	cw_session_begin(t->st, &si, &t->session_id);
}

/* Facts learned after the session row was written: a launched command
 * maps libpython and its CUDA copies only after exec, and rescans find
 * them. Only empty columns are filled. */
static void session_late_facts(struct trace *t)
{
	sqlite3_stmt *s = NULL;

	if (!t->st || (!t->python_version[0] && !t->cuda_version[0] && !t->driver_version[0]))
		return;
	if (sqlite3_prepare_v2(t->st->db,
			       "UPDATE sessions SET python = coalesce(python, ?1), cuda = coalesce(cuda, ?2), "
			       "driver = coalesce(driver, ?3) WHERE id = ?4",
			       -1, &s, NULL) != SQLITE_OK)
		return;
	if (t->python_version[0])
		sqlite3_bind_text(s, 1, t->python_version, -1, SQLITE_STATIC);
	if (t->cuda_version[0])
		sqlite3_bind_text(s, 2, t->cuda_version, -1, SQLITE_STATIC);
	if (t->driver_version[0])
		sqlite3_bind_text(s, 3, t->driver_version, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, t->session_id);
	if (sqlite3_step(s) != SQLITE_DONE)
		cw_debug("session facts: %s", sqlite3_errmsg(t->st->db));
	sqlite3_finalize(s);
}

/* Ends discovery (resuming whatever it stopped), keeping its figures. */
static void live_stop(struct trace *t)
{
	if (!t->live)
		return;
	t->live_was_on = 1;
	cw_live_close(t->live, &t->live_last);
	t->live = NULL;
}

static int run(struct trace *t)
{
	struct cw_kernel_probes_opts ko;
	struct cw_cuda_probes_opts co;
	struct cw_pipeline_opts po;
	struct cw_writer_opts wo;
	char err[512];
	uint64_t start = cw_monotonic_ns(), start_wall = cw_realtime_ns(), last_tick, attach_ns;
	int rc, i, gate = -1, status = 0, exit_code = CW_EXIT_OK, child_done = 0, json = t->o.json;
	struct sigaction sa;

	if (geteuid() != 0) {
		cw_report_error(json, "trace needs root (CAP_BPF and CAP_PERFMON to load and attach probes)");
		return CW_EXIT_NOPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		cw_report_error(json, "the kernel has no BTF (\"/sys/kernel/btf/vmlinux\" is missing); "
				      "CONFIG_DEBUG_INFO_BTF=y is required");
		return CW_EXIT_NOFEATURE;
	}
	for (i = 0; i < t->o.npids; i++)
		if (!cw_pid_exists(t->o.pids[i])) {
			cw_report_error(json, "no process with pid %u", t->o.pids[i]);
			return CW_EXIT_NOTARGET;
		}
	for (i = 0; i < t->o.nlibs; i++) {
		int n = cw_hooks_in_file(t->o.libs[i], NULL);

		if (n <= 0) {
			if (n == 0 || n == -ENOEXEC)
				cw_report_error(json, "\"%s\" exports none of the hooked CUDA/NCCL functions",
						t->o.libs[i]);
			else
				cw_report_error(json, "cannot read \"%s\": %s", t->o.libs[i], strerror(-n));
			return CW_EXIT_NOTARGET;
		}
	}
	rc = cw_store_open(&t->st, t->o.db, CW_STORE_CREATE, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		return CW_EXIT_DB;
	}
	if (t->o.command && (rc = spawn_command(t, t->o.command, &gate))) {
		cw_report_error(json, "cannot start \"%s\": %s", t->o.command[0], strerror(-rc));
		return CW_EXIT_FAIL;
	}

	cw_kernel_probes_opts_init(&ko);
	if (t->o.ring_kb)
		ko.ring_kb = t->o.ring_kb;
	rc = cw_kernel_probes_open(&t->kp, &ko, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		exit_code = rc == -EPERM ? CW_EXIT_NOPERM : rc == -ENOENT ? CW_EXIT_NOFEATURE : CW_EXIT_FAIL;
		goto out;
	}
	memset(&co, 0, sizeof(co));
	co.ring_kb = t->o.ring_kb;
	co.agg_pct = t->o.agg_pct;
	co.filter_tracked = t->o.npids || t->o.command;
	co.py_mode = t->o.py_mode;
	co.native_stacks = t->o.native_stacks;
	co.tracked_fd = cw_kernel_probes_tracked_fd(t->kp);
	co.drops_fd = cw_kernel_probes_drops_fd(t->kp);
	co.stats_fd = cw_kernel_probes_stats_fd(t->kp);
	rc = cw_cuda_probes_open(&t->cp, &co, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		exit_code = rc == -EPERM ? CW_EXIT_NOPERM : CW_EXIT_NOFEATURE;
		goto out;
	}
	if (!t->o.nlibs) {
		struct cw_live_opts lo = {
			.filter_tracked = co.filter_tracked,
			.hold = !t->o.no_hold,
			.tracked_fd = co.tracked_fd,
			.drops_fd = co.drops_fd,
			.stats_fd = co.stats_fd,
			.attach = live_attach,
			.ctx = t,
		};

		/* Without it (Linux < 6.7) the one-second rescan finds copies. */
		if (cw_live_open(&t->live, &lo, err, sizeof(err)))
			cw_debug("%s; library copies are found by the rescan only", err);
	}
	for (i = 0; i < t->o.nlibs; i++)
		if (attach_path(t, t->o.libs[i]) < 0) {
			cw_report_error(json, "cannot attach to \"%s\"", t->o.libs[i]);
			exit_code = CW_EXIT_NOTARGET;
			goto out;
		}
	if (!t->o.nlibs)
		attach_known_dirs(t);
	for (i = 0; i < t->o.npids; i++) {
		cw_kernel_probes_track(t->kp, t->o.pids[i]);
		add_pending(t, t->o.pids[i]);
	}
	if (t->child > 0) {
		cw_kernel_probes_track(t->kp, (uint32_t)t->child);
		add_pending(t, (uint32_t)t->child);
	}
	if (t->live && cw_live_start(t->live, err, sizeof(err))) {
		cw_debug("%s; library copies are found by the rescan only", err);
		cw_live_close(t->live, NULL);
		t->live = NULL;
	}

	session_begin(t, start_wall);
	memset(&wo, 0, sizeof(wo));
	wo.node = cw_default_node();
	wo.session_id = t->session_id;
	wo.size_cap_bytes = (int64_t)t->o.size_cap;
	rc = cw_writer_new(&t->w, t->st, &wo);
	if (rc) {
		cw_report_error(json, "cannot write to \"%s\": %s", t->o.db, strerror(-rc));
		exit_code = CW_EXIT_DB;
		goto out;
	}
	t->view_on = !t->o.json && !t->o.no_view && isatty(STDOUT_FILENO);
	if ((t->view_on || !t->o.json) && cw_trace_view_new(&t->view))
		t->view = NULL;
	if (!t->view)
		t->view_on = 0;
	else
		cw_trace_view_set_hang_floor(t->view, t->o.hang_after_ns);
	memset(&po, 0, sizeof(po));
	po.writer = t->w;
	po.mono_to_wall_ns = measure_offset();
	po.observer = observe;
	po.observer_ctx = t;
	rc = trace_python_new(&t->py, t->cp, &t->cons, t->o.py_mode != CW_PY_OFF, json);
	if (rc) {
		cw_report_error(json, "cannot set up Python stack capture: %s", strerror(-rc));
		goto out;
	}
	po.py = trace_python_resolver(t->py);
	po.sym = trace_python_symbolizer(t->py);
	rc = cw_pipeline_new(&t->pipe, &po);
	if (rc) {
		cw_report_error(json, "cannot start the pipeline: %s", strerror(-rc));
		goto out;
	}
	cw_consumer_init(&t->cons, t->pipe);
	t->cons.tap = tap;
	t->cons.tap_ctx = t;
	if (cw_kernel_probes_add_rings(t->kp, &t->rb, cw_consumer_sample, &t->cons) < 0 ||
	    cw_cuda_probes_add_ring(t->cp, &t->rb, cw_consumer_sample, &t->cons) < 0 ||
	    cw_consumer_start(&t->cons, t->rb)) {
		cw_report_error(json, "cannot read the ring buffers");
		goto out;
	}
	if (cw_sysinfo_new(&t->si, NULL))
		t->si = NULL;
	if (t->o.serve) {
		/* The API reads the file on its own read-only connections while
		 * the writer appends (WAL). */
		t->ss.o.listen = t->o.serve;
		t->ss.o.db_path = t->o.db;
		if ((rc = serve_setup_resolve(&t->ss, "trace")) || (rc = serve_setup_start(&t->ss, "trace", &t->srv))) {
			exit_code = rc;
			goto out;
		}
	}
	rescan(t);
	t->started = 1;
	attach_ns = cw_monotonic_ns() - start;
	cw_consumer_lock(&t->cons);
	cw_writer_counter_set(t->w, "trace.startup_ms", attach_ns / 1000000);
	cw_consumer_unlock(&t->cons);
	if (!t->o.json)
		fprintf(stderr, "causeway: tracing %s: %d libraries, %d probes attached in %.0f ms; recording to \"%s\"\n",
			t->o.command ? t->o.command[0] : t->o.npids ? "the named processes" : "every CUDA process",
			cw_cuda_probes_nlibs(t->cp), cw_cuda_probes_npairs(t->cp), attach_ns / 1e6, t->o.db);
	if (gate >= 0) {
		if (write(gate, "g", 1) != 1)
			cw_debug("gate write failed");
		close(gate);
		gate = -1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	last_tick = cw_monotonic_ns();
	while (!stop_signal) {
		struct timespec ts = { 0, 100 * 1000000L };
		uint64_t now;

		nanosleep(&ts, NULL);
		now = cw_monotonic_ns();
		trace_python_poll(t->py, now);
		if (t->child > 0 && waitpid(t->child, &status, WNOHANG) == t->child) {
			child_done = 1;
			break;
		}
		if (t->o.duration_ns && now - start >= t->o.duration_ns)
			break;
		if (now - last_tick >= NSEC_PER_SEC) {
			last_tick = now;
			tick(t, start);
			if (t->o.npids && !t->o.command && !any_alive(t))
				break;
		}
	}
	/* Nothing stays stopped past this point. */
	live_stop(t);
	if (t->child > 0 && !child_done) {
		kill(t->child, SIGTERM);
		waitpid(t->child, &status, 0);
		child_done = 1;
	}
	/* Let records of the last calls reach the rings before the drain. */
	{
		struct timespec ts = { 0, 50 * 1000000L };

		nanosleep(&ts, NULL);
	}
	cw_consumer_lock(&t->cons);
	cw_kernel_probes_flush(t->kp, 1);
	cw_consumer_unlock(&t->cons);
	if (cw_consumer_stop(&t->cons))
		exit_code = CW_EXIT_DB;
	/* Calls still open (a hung collective, a long synchronize) are stored
	 * as unfinished with how long they had run by now. */
	take_inflight(t, UINT64_MAX);
	cw_consumer_lock(&t->cons);
	if (cw_pipeline_flush(t->pipe, cw_monotonic_ns(), 1) && exit_code == CW_EXIT_OK)
		exit_code = CW_EXIT_DB;
	cw_consumer_unlock(&t->cons);
	{
		struct loss_totals lt;

		store_counters(t, &lt);
		if (!t->o.json)
			fprintf(stderr,
				"causeway: stopped; ring drops %llu, aggregated %llu, pipeline losses %llu; "
				"discovery: %llu held, %llu late%s\n",
				(unsigned long long)lt.ring_drops, (unsigned long long)lt.aggregated,
				(unsigned long long)lt.pipeline, (unsigned long long)lt.held,
				(unsigned long long)lt.late, lt.late ? " (calls before those attaches may be missing)" : "");
	}
	if (child_done && exit_code == CW_EXIT_OK)
		exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	live_stop(t);
	if (gate >= 0)
		close(gate); /* the child reads EOF and exits 126 */
	if (t->child > 0 && !child_done) {
		kill(t->child, SIGKILL);
		waitpid(t->child, NULL, 0);
	}
	if (t->cons.running)
		cw_consumer_stop(&t->cons);
	if (t->rb)
		ring_buffer__free(t->rb);
	cw_pipeline_free(t->pipe);
	trace_python_free(t->py); /* before the probes: it clears their maps */
	if (t->w && cw_writer_free(t->w) && exit_code == CW_EXIT_OK)
		exit_code = CW_EXIT_DB;
	if (t->session_id) {
		cw_session_end(t->st, t->session_id, cw_realtime_ns(), measure_offset());
		session_late_facts(t);
	}
	cw_server_stop(t->srv);
	serve_setup_release(&t->ss);
	cw_sysinfo_free(t->si);
	cw_cuda_probes_close(t->cp);
	cw_kernel_probes_close(t->kp);
	cw_trace_view_free(t->view);
	cw_store_close(t->st);
	return exit_code;
}

int cmd_trace(int argc, char **argv)
{
	struct trace *t = calloc(1, sizeof(*t));
	int json = 0, rc;

	if (!t)
		return CW_EXIT_FAIL;
	pthread_mutex_init(&t->attach_lock, NULL);
	rc = parse_args(&t->o, argc, argv, &json);
	if (rc) {
		free(t);
		return rc < 0 ? CW_EXIT_OK : rc;
	}
	if (!t->o.db)
		t->o.db = cw_default_db();
	if (!t->o.size_cap)
		t->o.size_cap = cw_default_size_cap();
	rc = run(t);
	free(t);
	return rc;
}
