/* The default size cap (cap.h). A quarter of the free space leaves the
 * rest of the filesystem to what else lives there (the database's WAL
 * included, bounded with the cap by the writer); 1 GiB holds hours of
 * history at the rates of a training loop (bench/RESULTS.md). */
#include "trace/cap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

uint64_t cw_trace_default_cap(uint64_t avail_bytes)
{
	uint64_t share = avail_bytes / CW_TRACE_CAP_SHARE_DIV;

	/* A full disk still gets a cap (0 would mean none): every row pruned. */
	if (!share)
		return 1;
	return share < CW_TRACE_CAP_FIXED ? share : CW_TRACE_CAP_FIXED;
}

int cw_trace_default_cap_for(const char *path, uint64_t *cap, uint64_t *avail)
{
	struct statvfs sv;

	*cap = CW_TRACE_CAP_FIXED;
	*avail = 0;
	if (statvfs(path, &sv)) {
		/* A store not made yet: the filesystem of its folder. */
		char dir[4096], *slash;

		if (errno != ENOENT)
			return -errno;
		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else
			slash[slash == dir] = '\0';
		if (statvfs(dir, &sv))
			return -errno;
	}
	/* f_bavail: what a non-root writer may use; root's reserved blocks
	 * are the system's margin, not the store's. */
	*avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	*cap = cw_trace_default_cap(*avail);
	return 0;
}

void cw_trace_format_bytes(uint64_t n, char *buf, size_t len)
{
	if (n >= (1ULL << 30))
		snprintf(buf, len, "%.1f GiB", (double)n / (double)(1ULL << 30));
	else if (n >= (1ULL << 20))
		snprintf(buf, len, "%.1f MiB", (double)n / (double)(1ULL << 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n >> 10));
}
