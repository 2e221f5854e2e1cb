/* export --nodes: the Perfetto trace of a live fleet. The window's rows
 * are fetched from every agent through the fan-out client's read-only
 * query API (src/fleet/fanout.h) into a private temporary store, the
 * clock offsets measured by the fan-out are stored there as merge would
 * (meta 'merge.skew'), and the trace is written from it by
 * cw_export_perfetto(), so one layout serves files, merges and fleets. */
#ifndef CW_EXPORT_PERFETTO_FLEET_H
#define CW_EXPORT_PERFETTO_FLEET_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "export/perfetto.h"
#include "fleet/fanout.h"

/* warn (may be NULL) receives each fan-out warning once (unreachable or
 * slow nodes, rows truncated at an agent's row cap, a large clock
 * offset). Returns 0, -EHOSTUNREACH when no node answered, or -errno;
 * err is set on failure. */
int cw_export_perfetto_fleet(const struct cw_fleet_opts *fo, const struct cw_export_opts *o, FILE *out,
			     struct cw_export_stats *st, void (*warn)(void *arg, const char *msg), void *warn_arg,
			     char *err, size_t errlen);

#endif
