/* What /api/v1/overview adds for the dashboard (docs/api.md): the capture
 * (sessions, loss counters, losses, attach counters), the host's snapshots
 * downsampled, whether a trace is live, and the window they cover. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <string.h>

#include "store/losses.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define HOST_MAX_POINTS 300

/* Counters that count records lost, refused or left unresolved (the
 * others - records, calls, events stored - are totals). total(), not sum():
 * a hostile INT64_MIN counter saturates instead of failing the statement. */
static const char SQL_DROPS[] =
	"SELECT k.name, CAST(total(k.value) AS INTEGER) FROM counters k JOIN sessions s ON s.id = k.session_id AND s.node = k.node"
	" WHERE (?1 = 0 OR s.ended_wall_ns IS NULL OR s.ended_wall_ns >= ?1) AND (?2 = 0 OR s.started_wall_ns <= ?2)"
	" AND (k.name LIKE '%drop%' OR k.name LIKE '%reject%' OR k.name LIKE '%fail%' OR k.name LIKE '%error%'"
	" OR k.name LIKE '%unpaired%' OR k.name LIKE '%overflow%' OR k.name LIKE '%orphan%'"
	" OR k.name LIKE '%unresolved%' OR k.name LIKE '%unfinished%' OR k.name LIKE '%map_full%'"
	" OR k.name LIKE '%untracked%' OR k.name = 'trace.cuda.aggregated')"
	" GROUP BY k.name ORDER BY k.name";

/* What trace stores about attaching (cmd_trace.c): per session, the
 * libraries and probes attached and the Python processes read. */
static const char SQL_ATTACH[] =
	"SELECT s.id, max(CASE WHEN k.name = 'trace.libraries' THEN k.value END),"
	" max(CASE WHEN k.name = 'trace.probes' THEN k.value END),"
	" max(CASE WHEN k.name = 'trace.discovery.attached' THEN k.value END),"
	" max(CASE WHEN k.name = 'trace.py_processes' THEN k.value END),"
	" max(CASE WHEN k.name = 'trace.startup_ms' THEN k.value END)"
	" FROM sessions s JOIN counters k ON k.session_id = s.id AND k.node = s.node"
	" WHERE k.name IN ('trace.libraries', 'trace.probes', 'trace.discovery.attached', 'trace.py_processes',"
	" 'trace.startup_ms') GROUP BY s.id ORDER BY s.id DESC LIMIT 100";

static const char SQL_SESSIONS[] =
	"SELECT id, node, kind, command, started_wall_ns, ended_wall_ns FROM sessions"
	" WHERE (?1 = 0 OR ended_wall_ns IS NULL OR ended_wall_ns >= ?1) AND (?2 = 0 OR started_wall_ns <= ?2)"
	" ORDER BY id DESC LIMIT 100";

/* One row per bucket of the window: the bucket's highest readings, so a
 * one-second spike survives the downsampling. */
static const char SQL_HOST[] =
	"SELECT min(wall_ns), max(cpu_pct), max(mem_pct), max(io_busy_pct), max(load1), max(io_bytes_per_s),"
	" max(swap_used_bytes), max(page_alloc_per_s), max(ncpu) FROM snapshots"
	" WHERE wall_ns >= ?1 AND wall_ns < ?2 GROUP BY (wall_ns - ?1) / ?3 ORDER BY 1";

static json_t *real_or_null(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null() : json_real(sqlite3_column_double(st, i));
}

static int step_all(sqlite3 *db, const char *sql, const int64_t *binds, int nbind,
		    int (*row)(sqlite3_stmt *st, json_t *acc, void *ctx), json_t *acc, void *ctx)
{
	sqlite3_stmt *st;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	for (int i = 0; i < nbind; i++)
		sqlite3_bind_int64(st, i + 1, binds[i]);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if ((ret = row(st, acc, ctx)))
			break;
	if (!ret && rc != SQLITE_DONE)
		ret = cw_sqlite_errno(rc);
	sqlite3_finalize(st);
	return ret;
}

static int drop_row(sqlite3_stmt *st, json_t *acc, void *ctx)
{
	const char *name = (const char *)sqlite3_column_text(st, 0);

	return name ? cw_json_set(acc, name, json_integer(sqlite3_column_int64(st, 1))) : 0;
}

static int attach_row(sqlite3_stmt *st, json_t *acc, void *ctx)
{
	return json_array_append_new(acc, json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}", "session_id",
						    (json_int_t)sqlite3_column_int64(st, 0), "libraries",
						    cw_api_int_or_null(st, 1), "probes", cw_api_int_or_null(st, 2),
						    "attached_late", cw_api_int_or_null(st, 3), "python_processes",
						    cw_api_int_or_null(st, 4), "startup_ms",
						    cw_api_int_or_null(st, 5)));
}

struct session_ctx {
	int live;  /* a trace is serving this database */
	int first; /* the newest session not yet seen */
};

static int session_row(sqlite3_stmt *st, json_t *acc, void *ctx)
{
	struct session_ctx *sc = ctx;
	int open = sqlite3_column_type(st, 5) == SQLITE_NULL;
	const char *kind = (const char *)sqlite3_column_text(st, 2);
	/* The session a live trace writes is the newest one, still open. */
	int live = sc->live && sc->first && open && kind && !strcmp(kind, "trace");

	sc->first = 0;
	return json_array_append_new(acc, json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:b}", "id",
						    (json_int_t)sqlite3_column_int64(st, 0), "node",
						    cw_api_text(st, 1), "kind", cw_api_text(st, 2), "command",
						    cw_api_text(st, 3), "started_ns", cw_api_int_or_null(st, 4),
						    "ended_ns", cw_api_int_or_null(st, 5), "live", live));
}

static int host_row(sqlite3_stmt *st, json_t *acc, void *ctx)
{
	return json_array_append_new(
		acc, json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "t_ns",
			       (json_int_t)sqlite3_column_int64(st, 0), "cpu_pct", real_or_null(st, 1), "mem_pct",
			       real_or_null(st, 2), "io_busy_pct", real_or_null(st, 3), "load1", real_or_null(st, 4),
			       "io_bytes_per_s", cw_api_int_or_null(st, 5), "swap_used_bytes",
			       cw_api_int_or_null(st, 6), "page_alloc_per_s", cw_api_int_or_null(st, 7), "ncpu",
			       cw_api_int_or_null(st, 8)));
}

int cw_overview_extend(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, json_t *j, struct cw_reply *r)
{
	struct cw_session_loss *l = NULL;
	struct session_ctx sc = { .live = atomic_load(&s->live) != NULL, .first = 1 };
	json_t *capture, *sessions, *drops, *attach, *host;
	uint64_t from, to, lo, hi;
	int64_t b[3];
	int n, rc;

	if (cw_api_window(db, c, &from, &to, r))
		return -EINVAL;
	if ((rc = cw_api_data_range(db, &lo, &hi)))
		return rc;
	from = from ? from : lo;
	to = to ? to : hi;
	sessions = json_array();
	drops = json_object();
	attach = json_array();
	host = json_array();
	capture = json_pack("{s:o, s:o, s:o}", "sessions", sessions, "drops", drops, "attach", attach);
	if (!capture || !host || json_object_set_new(j, "capture", capture) || json_object_set_new(j, "host", host))
		return -ENOMEM;
	b[0] = (int64_t)from;
	b[1] = (int64_t)to;
	if ((rc = step_all(db, SQL_SESSIONS, b, 2, session_row, sessions, &sc)) ||
	    (rc = step_all(db, SQL_DROPS, b, 2, drop_row, drops, NULL)) ||
	    (rc = step_all(db, SQL_ATTACH, NULL, 0, attach_row, attach, NULL)))
		return rc;
	if ((n = cw_store_losses(db, NULL, from, to, &l)) < 0)
		return n;
	json_object_set_new(capture, "losses", cw_losses_to_json(l, n));
	free(l);
	if (to > from) {
		b[2] = (int64_t)((to - from + HOST_MAX_POINTS - 1) / HOST_MAX_POINTS);
		/* At least one snapshot interval, so one bucket is one row. */
		b[2] = b[2] < (int64_t)NSEC_PER_SEC ? (int64_t)NSEC_PER_SEC : b[2];
		if ((rc = step_all(db, SQL_HOST, b, 3, host_row, host, NULL)))
			return rc;
	}
	json_object_set_new(j, "live", json_boolean(sc.live));
	json_object_set_new(j, "window", json_pack("{s:I, s:I}", "from_ns", (json_int_t)from, "to_ns", (json_int_t)to));
	return 0;
}
