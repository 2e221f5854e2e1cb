/* The store's size cap when none is configured (docs/trace.md, "Size
 * cap"): trace never grows a database without bound. */
#ifndef CW_TRACE_CAP_H
#define CW_TRACE_CAP_H

#include <stddef.h>
#include <stdint.h>

/* The fixed ceiling of the default cap, and the share of the free space
 * on the database's filesystem (at start) it may take. */
#define CW_TRACE_CAP_FIXED (1ULL << 30)
#define CW_TRACE_CAP_SHARE_DIV 4

/* min(CW_TRACE_CAP_FIXED, avail / CW_TRACE_CAP_SHARE_DIV). */
uint64_t cw_trace_default_cap(uint64_t avail_bytes);

/* The default cap for the database at path: *avail receives the bytes an
 * unprivileged writer may still use on its filesystem. Returns 0, or
 * -errno when statvfs fails (*cap is then CW_TRACE_CAP_FIXED). */
int cw_trace_default_cap_for(const char *path, uint64_t *cap, uint64_t *avail);

/* "12.0 MiB", "1.0 GiB", "512 KiB". */
void cw_trace_format_bytes(uint64_t n, char *buf, size_t len);

#endif
