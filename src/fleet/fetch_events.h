/* Fetched events written straight into the events view's storage (calls,
 * kevents and their thread, op and string rows) with prepared statements
 * and in-memory caches of the interned rows, instead of one INSERT on the
 * view per row: its trigger looks every interned row up again and costs
 * several times the insert itself (export --nodes of millions of calls). */
#ifndef CW_FLEET_FETCH_EVENTS_H
#define CW_FLEET_FETCH_EVENTS_H

#include <jansson.h>
#include <sqlite3.h>

struct cw_evsink;

/* The columns of one row, in order: node, seq, wall_ns, mono_ns, pid, tid,
 * cgroup_id, comm, source, op, duration_ns, arg0..arg3, bytes, detail,
 * ret, device, anomalous, then the Python stack's hash, depth, frames,
 * user_file, user_line, user_function (all NULL: none). */
#define CW_EVSINK_COLS 26

int cw_evsink_new(struct cw_evsink **out, sqlite3 *db);
void cw_evsink_free(struct cw_evsink *s);

/* Stores one row (a JSON array of CW_EVSINK_COLS values, the agent's
 * types checked here). A row without node, seq, times, pid, tid, source
 * or op is skipped as the view's NOT NULL columns would refuse it: 1.
 * Stored: 0. A failed write: -errno. Call inside a transaction. */
int cw_evsink_put(struct cw_evsink *s, json_t *row);

/* After a rolled-back transaction: forget interned ids that were not
 * committed and read the next id again. */
int cw_evsink_reset(struct cw_evsink *s);

#endif
