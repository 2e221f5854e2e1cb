/* Userspace side of the in-BPF Python stack capture (src/bpf/pystack.bpf.h):
 * fills cw_py_procs (tgid -> offsets) for each traced Python process and
 * keeps cw_py_tstate (tid -> PyThreadState address) current.
 *
 * The maps belong to whichever skeleton includes pystack.bpf.h (cuda); the
 * caller passes their fds. A process that cannot be read (not Python, an
 * unsupported version) is skipped with its reason, so BPF never walks a
 * layout it was not given. */
#ifndef CW_PYFRAME_PYSTACK_LOADER_H
#define CW_PYFRAME_PYSTACK_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/pystack.bpf.h"
#include "pyframe/pyproc.h"

struct cw_pystack_loader;

int cw_pystack_loader_new(struct cw_pystack_loader **out, int procs_map_fd, int tstate_map_fd);
/* Removes every entry it added from both maps. */
void cw_pystack_loader_free(struct cw_pystack_loader *l);

/* Adds process pid: attaches (cw_py_proc_attach), learns PyCode_Type from a
 * live code object, writes its offsets and its threads. Returns 0, or
 * -errno with a lower-case reason in why (-ENOENT: not a Python process). */
int cw_pystack_loader_add(struct cw_pystack_loader *l, pid_t pid, char *why, size_t whylen);

/* Called by cw_pystack_loader_add once a process is attached (its
 * interpreter is initialized) and before its maps are written, that is,
 * before BPF can capture a stack of it: whoever resolves those stacks
 * forgets an earlier failure to read the process there. */
typedef void (*cw_pystack_attached_fn)(void *ctx, pid_t pid);
void cw_pystack_loader_on_attached(struct cw_pystack_loader *l, cw_pystack_attached_fn fn, void *ctx);

/* Re-reads the thread lists of every added process: new threads are
 * added, exited ones removed; a process that is gone is dropped. Trace
 * calls it periodically (new threads are captured from the next refresh).
 * Returns the number of thread states mapped. */
int cw_pystack_loader_refresh(struct cw_pystack_loader *l);

/* Drops pid (it exited). */
void cw_pystack_loader_remove(struct cw_pystack_loader *l, pid_t pid);

#endif
