/* The one-shot dump behind `causeway where PID` and the MCP where tool:
 * every thread's Python stack (the executing line of each frame) and
 * native stack.
 *
 * The process is stopped with ptrace for the moment of the dump so the
 * Python frame chains and registers are read consistently, then resumed.
 * Without ptrace (already traced, or --no-native) the Python frames are
 * read from the running process, which can race with it; the walker
 * tolerates that by validating every pointer. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyframe/framewalk.h"
#include "pyframe/resolver.h"
#include "symbol/dwstack.h"
#include "symbol/fpstack.h"
#include "symbol/symbolizer.h"
#include "where/where.h"
#include "util/utf8.h"

/* Caps on one dump's native walks: remote memory is hostile, and a
 * corrupt stack must not keep the process stopped. */
#define NATIVE_MAX 256
#define DWARF_BUDGET_NS (5ull * 1000000000ull) /* all threads of one dump */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One thread's native stack into t: "native" (symbolized frames),
 * "native_unwinder" ("dwarf" or "frame-pointer"), "native_truncated" when a
 * cap stopped the walk, and "native_dwarf_error" when DWARF was tried and
 * the frame-pointer walk was used instead.
 *
 * DWARF call-frame information is the unwinder; frame pointers are the
 * fallback when it yields no caller (no CFI for the pc, unreadable module,
 * budget spent) or when the frame-pointer chain is deeper (code whose CFI
 * ends early, such as a JIT's frames that keep frame pointers). */
static void native_stack(json_t *t, struct cw_dwstack *dw, const char *dw_err, long pid, pid_t tid,
			 struct cw_rmem *mem, uint64_t deadline)
{
	static uint64_t dips[NATIVE_MAX], fips[NATIVE_MAX];
	const uint64_t *ips;
	json_t *nat = json_array();
	int nd = -1, nf, n, k, truncated = 0;
	char why[256] = "";

	if (dw && mono_ns() < deadline)
		nd = cw_dwstack_thread(dw, tid, dips, NATIVE_MAX, deadline, &truncated, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s", dw ? "time budget spent" : dw_err);
	nf = cw_thread_native_stack((pid_t)pid, tid, mem, fips, NATIVE_MAX);
	if (nd >= 2 && nd >= nf) {
		ips = dips;
		n = nd;
		json_object_set_new(t, "native_unwinder", json_string("dwarf"));
		if (truncated)
			json_object_set_new(t, "native_truncated", json_true());
	} else {
		if (nd >= 0 && !why[0])
			snprintf(why, sizeof(why), nd < 2 ? "no caller found" : "frame pointers went deeper");
		ips = fips;
		n = nf;
		json_object_set_new(t, "native_unwinder", json_string("frame-pointer"));
		if (why[0])
			json_object_set_new(t, "native_dwarf_error", cw_json_str(why));
		if (n == NATIVE_MAX)
			json_object_set_new(t, "native_truncated", json_true());
	}
	/* raw addresses now, names after the process is resumed: opening its
	 * files must never be done while it is held stopped */
	for (k = 0; k < n; k++)
		json_array_append_new(nat, json_integer((json_int_t)ips[k]));
	json_object_set_new(t, "native", nat);
}

/* The raw addresses of one thread's "native" into symbols. */
static void symbolize_native(json_t *t, struct cw_symz *symz, long pid)
{
	json_t *nat = json_object_get(t, "native"), *syms, *v;
	size_t k;

	if (!nat)
		return;
	syms = json_array();
	json_array_foreach(nat, k, v) {
		uint64_t ip = (uint64_t)json_integer_value(v);
		char sym[600];

		/* a return address can be the first byte after a noreturn
		 * call, i.e. the next function: look up the call instruction
		 * instead (ip - 1), as perf and gdb do */
		if (cw_symz_symbolize(symz, (uint32_t)pid, k ? ip - 1 : ip, sym, sizeof(sym)))
			snprintf(sym, sizeof(sym), "0x%llx", (unsigned long long)ip);
		json_array_append_new(syms, cw_json_str(sym));
	}
	json_object_set_new(t, "native", syms);
}

static json_t *python_frames(struct cw_pyres *r, struct cw_py_proc *p, uint64_t frame, int *truncated)
{
	static struct cw_py_frame frames[CW_PY_WALK_MAX];
	json_t *arr = json_array();
	int n, i;

	n = cw_py_walk(p, frame, frames, CW_PY_WALK_MAX, truncated);
	for (i = 0; i < n; i++) {
		struct cw_py_location loc;

		if (cw_pyres_resolve(r, (uint32_t)p->pid, frames[i].code, frames[i].lasti, &loc))
			json_array_append_new(arr, json_pack("{s:s,s:s,s:i}", "file", "?", "function", "?", "line", 0));
		else
			json_array_append_new(arr, json_pack("{s:o,s:o,s:i}", "file", cw_json_str(loc.file), "function",
							     cw_json_str(loc.function), "line", loc.line));
	}
	if (n < 0)
		*truncated = 1;
	return arr;
}

/* One dump at a time: the frame buffers are large and static. */
int cw_where_collect(long pid, int native, json_t **out, char *err, size_t errlen)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct cw_py_thread pyth[CW_PY_MAX_THREADS];
	static struct cw_stopped stopped;
	struct cw_pyres *res = NULL;
	struct cw_symz *symz = NULL;
	struct cw_py_proc *p;
	struct cw_rmem mem;
	int npy = 0, i, rc = 0, nstopped = -1, pyerr = 0;
	char why[256] = "", ver[32];
	json_t *root = NULL, *threads, *jt;
	size_t jk;
	struct cw_dwstack *dw = NULL;
	char dw_err[128] = "";
	uint64_t deadline = 0;

	*out = NULL;
	pthread_mutex_lock(&mu);
	cw_rmem_init_pid(&mem, (pid_t)pid);
	if (cw_pyres_new(&res) || cw_symz_new(&symz)) {
		snprintf(err, errlen, "where: out of memory");
		rc = -ENOMEM;
		goto out;
	}
	/* Every file of the process (its Python runtime, its objects and
	 * debug files) is opened before it is stopped: they are its own to
	 * choose (util/root_open.h), and it must never wait on one stopped. */
	p = cw_pyres_proc(res, (uint32_t)pid, why, sizeof(why));
	if (!p && strstr(why, "no process")) {
		snprintf(err, errlen, "where: %s", why);
		rc = -ESRCH;
		goto out;
	}
	if (native == CW_WHERE_FP_ONLY) {
		snprintf(dw_err, sizeof(dw_err), "not asked for (--frame-pointers)");
	} else if (native) {
		int e = cw_dwstack_open((pid_t)pid, &dw);

		if (e)
			snprintf(dw_err, sizeof(dw_err), "%s", e == -ENOTSUP ? "this build has no DWARF unwinder" :
				 strerror(-e));
	}
	if (native) {
		nstopped = cw_threads_stop((pid_t)pid, &stopped);
		if (nstopped == -ESRCH) {
			snprintf(err, errlen, "where: no process %ld", pid);
			rc = -ESRCH;
			goto out;
		}
	}
	cw_dwstack_freeze(dw);
	deadline = mono_ns() + DWARF_BUDGET_NS;
	root = json_pack("{s:I}", "pid", (json_int_t)pid);
	threads = json_array();
	json_object_set_new(root, "threads", threads);
	if (p) {
		if (p->off.version_hex)
			snprintf(ver, sizeof(ver), "%u.%u.%u", p->off.version_hex >> 24, (p->off.version_hex >> 16) & 0xff,
				 (p->off.version_hex >> 8) & 0xff);
		else
			snprintf(ver, sizeof(ver), "3.%d", p->off.minor);
		json_object_set_new(root, "python", cw_json_str(ver));
		json_object_set_new(root, "runtime_binary", cw_json_str(p->binary));
		if (p->off.free_threaded) /* 3.14t/3.15t: no GIL, per-thread bytecode */
			json_object_set_new(root, "free_threaded", json_true());
		npy = cw_py_threads(p, pyth, CW_PY_MAX_THREADS);
		if (npy < 0) {
			snprintf(why, sizeof(why), "cannot read the thread list (%s)", strerror(-npy));
			json_object_set_new(root, "python_error", cw_json_str(why));
			pyerr = 1;
			npy = 0;
		}
	} else {
		json_object_set_new(root, "python_error", cw_json_str(why));
		/* a Python the walker cannot read is an error; no Python at all is not */
		pyerr = !strstr(why, "no python runtime");
	}
	/* Threads in kernel order when stopped (all of them), else the Python
	 * thread states; Python threads whose TID is unknown are listed last. */
	if (nstopped < 0) {
		stopped.n = 0;
		for (i = 0; i < npy && stopped.n < CW_FP_MAX_TIDS; i++)
			stopped.tids[stopped.n++] = (pid_t)pyth[i].tid;
	}
	for (i = 0; i < stopped.n; i++) {
		json_t *t = json_pack("{s:I,s:b}", "tid", (json_int_t)stopped.tids[i], "main", stopped.tids[i] == pid);
		int k, truncated = 0;

		for (k = 0; k < npy; k++) {
			if (pyth[k].tid && (pid_t)pyth[k].tid == stopped.tids[i]) {
				json_object_set_new(t, "python", python_frames(res, p, pyth[k].frame, &truncated));
				if (truncated)
					json_object_set_new(t, "python_truncated", json_true());
				pyth[k].tid = 0;
				pyth[k].tstate = 0;
			}
		}
		if (!json_object_get(t, "python"))
			json_object_set_new(t, "python", json_array());
		if (native && stopped.held[i]) {
			native_stack(t, dw, dw_err, pid, stopped.tids[i], &mem, deadline);
		} else if (native) {
			json_object_set_new(t, "native_error",
					    cw_json_str(nstopped < 0 ? strerror(-nstopped) : "thread could not be stopped"));
		}
		json_array_append_new(threads, t);
	}
	for (i = 0; i < npy; i++) {
		json_t *t;
		int truncated = 0;

		if (!pyth[i].tstate)
			continue; /* listed above */
		t = json_pack("{s:i,s:b}", "tid", (int)pyth[i].tid, "main", 0);
		json_object_set_new(t, "python", python_frames(res, p, pyth[i].frame, &truncated));
		json_array_append_new(threads, t);
	}
	cw_dwstack_close(dw);
	dw = NULL;
	if (nstopped >= 0)
		cw_threads_resume(&stopped);
	json_array_foreach(threads, jk, jt)
		symbolize_native(jt, symz, pid);
	if (pyerr)
		rc = -ENOEXEC;
	*out = root;
	root = NULL;
out:
	cw_dwstack_close(dw);
	if (nstopped >= 0)
		cw_threads_resume(&stopped);
	json_decref(root);
	cw_symz_free(symz);
	cw_pyres_free(res);
	pthread_mutex_unlock(&mu);
	return rc;
}

