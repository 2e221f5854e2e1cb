/* An attached Python process: where its runtime lives, which version it
 * is, and the offsets to read it with.
 *
 * Discovery never executes anything in or from the target: _PyRuntime and
 * Py_Version are looked up in .dynsym/.symtab of libpython (shared builds,
 * e.g. pyenv) or of the executable (static builds, e.g. Debian's
 * /usr/bin/python3.11), the load bias comes from /proc/PID/maps, and files
 * are opened through /proc/PID/root so containers resolve their own. */
#ifndef CW_PYFRAME_PYPROC_H
#define CW_PYFRAME_PYPROC_H

#include <stdint.h>
#include <sys/types.h>

#include "pyframe/offsets.h"
#include "util/rmem.h"

#define CW_PY_TIDMAP_MAX 1024

struct cw_py_proc {
	pid_t pid;
	struct cw_rmem mem;
	struct cw_py_offsets off;
	uint64_t runtime;        /* address of _PyRuntime in the target */
	char binary[256];        /* the object that holds it, as the target names it */
	/* 3.10: PyThreadState has no native_thread_id; the TID is read from
	 * glibc's struct pthread at thread_id (pthread_self()) + this offset,
	 * inferred at attach by matching the process's TIDs. -1 unknown. */
	int32_t pthread_tid_off;
	uint64_t code_type;      /* address of PyCode_Type, learned from a verified code object */
	/* A target in another PID namespace (a container) stores the TIDs
	 * of its namespace; BPF and /proc name the host's. The innermost
	 * ns TID -> host TID pairs come from /proc/PID/task/T/status NSpid. */
	int pidns_nested;
	int ntidmap;
	struct { uint32_t ns, host; } tidmap[CW_PY_TIDMAP_MAX];
};

/* Attaches to pid: finds the runtime, the version and the offsets, and
 * validates them against the live structures. On failure returns -errno and
 * writes a lower-case reason into why (e.g. "python 3.9.18 is not supported
 * (3.10 to 3.15 are)", "no python runtime (_PyRuntime) in process 42").
 * -ESRCH gone, -EPERM not allowed, -ENOENT not a Python process, -ENOTSUP
 * unsupported version or build, -EPROTO structures failed validation. */
int cw_py_proc_attach(struct cw_py_proc *p, pid_t pid, char *why, size_t whylen);

/* The host TID of a thread that the target names ns_tid (its own PID
 * namespace's), refreshing the map once on a miss; ns_tid itself when the
 * target shares our namespace, 0 when it is not (or no longer) a thread. */
uint32_t cw_py_proc_host_tid(struct cw_py_proc *p, uint32_t ns_tid);

/* The same on an already filled mem/off/runtime (tests with fake memory):
 * validates the interpreter list. Returns 0 or -EPROTO. */
int cw_py_proc_validate(struct cw_py_proc *p);

#endif
