/* /api/v1/export/perfetto: the Chrome trace JSON `causeway export` writes,
 * for a window (and optionally one process), as a download (docs/api.md,
 * docs/export.md). The file is built in memory with export's own writer
 * under a slice cap and a byte cap, so one request cannot exhaust the
 * agent's memory. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/perfetto.h"
#include "util/timeutil.h"

#define EXPORT_DEFAULT_MAX_EVENTS 200000
#define EXPORT_MAX_EVENTS 500000
#define EXPORT_MAX_BYTES ((size_t)256 << 20)

void cw_route_export_perfetto(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct cw_export_opts o = { 0 };
	struct cw_export_stats st = { 0 };
	int64_t max_events, pid, chains;
	uint64_t deadline;
	char err[512], *buf = NULL;
	size_t len = 0;
	sqlite3 *db;
	FILE *f;
	int rc;

	if (cw_api_int(c, "max_events", 1, EXPORT_MAX_EVENTS, EXPORT_DEFAULT_MAX_EVENTS, &max_events, r) ||
	    cw_api_int(c, "pid", 1, INT32_MAX, 0, &pid, r) || cw_api_int(c, "chains", 0, 1, 1, &chains, r))
		return;
	if (cw_api_open(s, &db, &deadline, r))
		return;
	if (cw_api_window(db, c, &o.from_wall_ns, &o.to_wall_ns, r))
		goto out;
	if (!o.from_wall_ns != !o.to_wall_ns) {
		/* export takes both ends or neither (the newest minute). */
		uint64_t lo, hi;

		if ((rc = cw_api_data_range(db, &lo, &hi))) {
			cw_api_fail(s, deadline, rc, "export", r);
			goto out;
		}
		o.from_wall_ns = o.from_wall_ns ? o.from_wall_ns : lo;
		o.to_wall_ns = o.to_wall_ns ? o.to_wall_ns : hi;
	}
	o.max_events = (uint64_t)max_events;
	o.pid = pid;
	o.no_chains = !chains;
	if (!(f = open_memstream(&buf, &len))) {
		cw_reply_error(r, 500, "out of memory");
		goto out;
	}
	rc = cw_export_perfetto(db, &o, f, &st, err, sizeof(err));
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc) {
		if (cw_monotonic_ns() > deadline)
			cw_api_fail(s, deadline, rc, "export", r);
		else
			cw_reply_error(r, rc == -EINVAL ? 400 : 500, "export failed: %s", err[0] ? err : strerror(-rc));
		goto out;
	}
	if (len > EXPORT_MAX_BYTES) {
		cw_reply_error(r, 413, "the trace is %zu bytes, above the %zu-byte cap: narrow the window or lower "
				       "max_events", len, EXPORT_MAX_BYTES);
		goto out;
	}
	r->status = 200;
	r->body = buf;
	r->len = len;
	r->ctype = "application/json";
	buf = NULL;
	snprintf(r->hdr[0][0], sizeof(r->hdr[0][0]), "Content-Disposition");
	snprintf(r->hdr[0][1], sizeof(r->hdr[0][1]), "attachment; filename=\"causeway-%.40s.json\"", s->node);
	/* How much the cap cut, for the page to say so. */
	snprintf(r->hdr[1][0], sizeof(r->hdr[1][0]), "X-Causeway-Slices");
	snprintf(r->hdr[1][1], sizeof(r->hdr[1][1]), "%llu of %llu", (unsigned long long)st.slices,
		 (unsigned long long)st.in_window);
	r->nhdr = 2;
out:
	free(buf);
	cw_server_close_db(db);
}
