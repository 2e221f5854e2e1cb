/* The live Python resolver: struct cw_py_resolver (symbol/frames.h) backed by
 * the target processes' memory.
 *
 * Code objects are cached by (pid, code address). An address can be
 * reused once a code object is freed, so every entry carries a fingerprint
 * (filename, name, qualname and line-table pointers plus co_firstlineno)
 * that is re-read from the target when the entry is older than a short
 * revalidation window; a mismatch refetches the entry. Processes are
 * attached on first use; a process that cannot be attached (not Python,
 * unsupported version) is remembered with its reason and retried later. */
#ifndef CW_PYFRAME_RESOLVER_H
#define CW_PYFRAME_RESOLVER_H

#include <stdint.h>
#include <sys/types.h>

#include "symbol/frames.h"
#include "pyframe/pyproc.h"

struct cw_pyres;

struct cw_pyres_stats {
	uint64_t hits, misses, revalidations, reused, errors;
};

int cw_pyres_new(struct cw_pyres **out);
void cw_pyres_free(struct cw_pyres *r);

/* Fills a cw_py_resolver whose ctx is r. */
void cw_pyres_as_resolver(struct cw_pyres *r, struct cw_py_resolver *out);

/* Resolves one frame (code address, lasti in code units; UINT32_MAX for a
 * frame that has not started). Returns 0 or -errno. */
int cw_pyres_resolve(struct cw_pyres *r, uint32_t pid, uint64_t code, uint32_t lasti, struct cw_py_location *out);

/* The attached process for pid (attaching if needed), or NULL with the
 * reason in why. Valid until cw_pyres_forget(pid) or cw_pyres_free. */
struct cw_py_proc *cw_pyres_proc(struct cw_pyres *r, uint32_t pid, char *why, size_t whylen);

/* A call of pid on thread tid, which runs no Python: the stack of the
 * Python thread waiting on it (pyframe/attribute.h) into out's frames,
 * its TID into *via. Returns the frame count or 0 (nothing attributed). */
int cw_pyres_attribute(struct cw_pyres *r, uint32_t pid, uint32_t tid, struct cw_pystack *out, uint32_t *via);

/* Drops everything cached for pid (the process exited). */
void cw_pyres_forget(struct cw_pyres *r, uint32_t pid);
/* A failure to read pid is forgotten: the next resolve tries at once
 * (its interpreter is known to be initialized now). */
void cw_pyres_retry(struct cw_pyres *r, uint32_t pid);

/* Revalidation window in ns (default 100 ms; 0 re-reads the fingerprint on
 * every hit). */
void cw_pyres_set_revalidate_ns(struct cw_pyres *r, uint64_t ns);

#endif
