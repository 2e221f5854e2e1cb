/* Native address -> "object!function+0xoff", for the symbolizing thread
 * (symbol/symworker.h) and `causeway where`.
 *
 * Per process, the memory map is cached and re-read when an address falls
 * outside it (a library loaded later). ELF files are indexed once and
 * shared across processes by GNU build-id (by path when a file has none),
 * so a hundred ranks of one job index libtorch once. Names are demangled. */
#ifndef CW_SYMBOL_SYMBOLIZER_H
#define CW_SYMBOL_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

#include "symbol/frames.h"

struct cw_symz;

int cw_symz_new(struct cw_symz **out);
void cw_symz_free(struct cw_symz *z);

/* Symbolizes ip of pid into out: "libc.so.6!__libc_read+0x12",
 * "app!main+0x1d", or "app+0x1234" / "[anon]+0x..." when no symbol covers
 * it. Returns 0, or -ENOENT when ip is not mapped in pid. */
int cw_symz_symbolize(struct cw_symz *z, uint32_t pid, uint64_t ip, char *out, size_t outlen);

/* Drops the cached map of pid (it exited or exec'd). */
void cw_symz_forget(struct cw_symz *z, uint32_t pid);

#endif
