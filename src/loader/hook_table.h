/* hook_table: which exported functions trace hooks. The table maps
 * exported symbol names to ops. Every variant a library exports is
 * attached, not the first that resolves: per-thread default stream builds
 * call cuLaunchKernel_ptsz and cudaMemcpy_ptds, legacy builds the plain
 * names, and one process may use both. Symbol offsets come from the file's
 * .dynsym via libelf (elfsyms.h); the target is never run. */
#ifndef CW_LOADER_HOOK_TABLE_H
#define CW_LOADER_HOOK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "loader/discover.h"
#include "loader/elfsyms.h"

/* One hooked name: the symbol without its _ptsz/_ptds suffix. */
struct cw_hook_def {
	const char *name;
	uint16_t op;     /* enum cw_op, or enum cw_hook for bookkeeping */
	uint8_t source;  /* enum cw_source */
	uint8_t lib;     /* enum cw_lib_kind it lives in */
};

/* The table, terminated by a NULL name. */
const struct cw_hook_def *cw_hooks(void);
int cw_hooks_count(enum cw_lib_kind kind);

/* The hooked functions one file exports: one entry per address (aliases
 * such as pncclAllReduce share one). */
struct cw_hook_found {
	const struct cw_hook_def *hook;
	uint64_t vaddr;
};

struct cw_hook_scan {
	struct cw_hook_found *v;
	size_t n, alloc;
};

/* Adds e's hooked symbols to sc (sc->v is the caller's to free). Returns 0
 * or -errno. */
int cw_hook_scan_file(struct cw_elf *e, struct cw_hook_scan *sc);

/* Counts the hooked symbols a file exports, without attaching (check and
 * --cuda-lib validation). Returns the count or -errno. */
int cw_hooks_in_file(const char *path, int *total_hooks);

#endif
