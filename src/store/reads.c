/* The SQL of each layout-dependent read (layout.h), for both layouts: the
 * one place that knows how an older file's wide events table and schema
 * v7's calls and kevents answer the same question. The v7 text reads the
 * tables under the events view each by its key: the view's compound would
 * be read or sorted whole. */
#include "store/layout.h"

#include <errno.h>

#include "store/layout_int.h"

/* The slowest calls of an op (routes_ops.c); equal durations come newest
 * first, as an index scan gives them on an older file. */
#define SLOW_EVENTS                                                                                         \
	"SELECT e.wall_ns, e.duration_ns, e.pid, e.tid, e.comm, p.rank, ps.user_file, ps.user_line,"       \
	" ps.user_function, e.ret, e.id, ps.python_via FROM events e"                                                       \
	" LEFT JOIN processes p ON p.node = e.node AND p.pid = e.pid"                                        \
	" LEFT JOIN py_stacks ps ON ps.id = e.py_stack_id"
#define SLOW_CALLS                                                                                          \
	"SELECT " CW_CALL_WALL ", c.dur, t.pid, t.tid, t.comm, p.rank, ps.user_file, ps.user_line,"        \
	" ps.user_function, c.ret, c.id, ps.python_via FROM " CW_CALLS_FROM                                                \
	" LEFT JOIN processes p ON p.node = t.node AND p.pid = t.pid"                                        \
	" LEFT JOIN py_stacks ps ON ps.id = c.pystack"                                                       \
	" WHERE c.op = (SELECT id FROM call_ops WHERE source = ?2 AND op = ?1)"                              \
	" AND " CW_CALL_WALL " >= ?3 AND " CW_CALL_WALL " < ?4"
#define SLOW_KEVENTS                                                                                        \
	"SELECT e.wall_ns, e.duration_ns, e.pid, e.tid, e.comm, p.rank, ps.user_file, ps.user_line,"       \
	" ps.user_function, e.ret, e.id, ps.python_via FROM kevents e"                                                      \
	" LEFT JOIN processes p ON p.node = e.node AND p.pid = e.pid"                                        \
	" LEFT JOIN py_stacks ps ON ps.id = e.py_stack_id"                                                   \
	" WHERE e.op = ?1 AND e.source = ?2 AND e.wall_ns >= ?3 AND e.wall_ns < ?4"

/* Stacks (mcp/tools_store.c): on v7 only the columns wanted from calls
 * and kevents, not the view, which also looks up every call's detail and
 * arguments. */
#define STACKS_SQL(from)                                                                              \
	"SELECT stack_id, py_stack_id, count(*), CAST(total(duration_ns) AS INTEGER), max(duration_ns), min(id), op FROM " from \
	" WHERE (?1 IS NULL OR op = ?1) AND (?2 = 0 OR pid = ?2)"                                           \
	" AND (stack_id IS NOT NULL OR py_stack_id IS NOT NULL)"                                            \
	" GROUP BY op, stack_id, py_stack_id ORDER BY CAST(total(duration_ns) AS INTEGER) DESC LIMIT ?3"

/* [read][0]: an older file's events table; [read][1]: schema v7. */
static const char *const reads[CW_READ_COUNT][2] = {
	[CW_READ_EVENTS_COUNT] = {
		"SELECT count(*) FROM events",
		"SELECT (SELECT count(*) FROM calls) + (SELECT count(*) FROM kevents)",
	},
	[CW_READ_OP_SLOWEST] = {
		SLOW_EVENTS
		" WHERE e.op = ?1 AND e.anomalous = 1 AND e.source = ?2 AND e.wall_ns >= ?3 AND e.wall_ns < ?4"
		" ORDER BY e.duration_ns DESC LIMIT ?5",
		"SELECT * FROM (" SLOW_CALLS " AND c.anomalous = 1 ORDER BY c.dur DESC LIMIT ?5)"
		" UNION ALL SELECT * FROM (" SLOW_KEVENTS " AND e.anomalous = 1 ORDER BY e.duration_ns DESC LIMIT ?5)"
		" ORDER BY 2 DESC, 11 DESC LIMIT ?5",
	},
	[CW_READ_OP_SLOWEST_RANGE] = {
		SLOW_EVENTS
		" WHERE e.id >= ?6 AND e.id < ?7 AND e.anomalous = 0 AND e.op = ?1 AND e.source = ?2"
		" AND e.wall_ns >= ?3 AND e.wall_ns < ?4 ORDER BY e.duration_ns DESC LIMIT ?5",
		"SELECT * FROM (" SLOW_CALLS " AND c.id >= ?6 AND c.id < ?7 AND c.anomalous = 0"
		" ORDER BY c.dur DESC LIMIT ?5)"
		" UNION ALL SELECT * FROM (" SLOW_KEVENTS " AND e.id >= ?6 AND e.id < ?7 AND e.anomalous = 0"
		" ORDER BY e.duration_ns DESC LIMIT ?5)"
		" ORDER BY 2 DESC, 11 DESC LIMIT ?5",
	},
	/* On v7 the calls table by its rowid (the view's compound is not
	 * read in rowid order: SQLite gathers and sorts every row of the
	 * range). The same columns; kernel-side events (kevents) are never of
	 * these sources. */
	[CW_READ_TIMELINE_CUDA] = {
		"SELECT e.id, e.wall_ns, e.duration_ns, e.pid, e.tid, e.comm, e.op, e.ret, e.detail,"
		" ps.user_file, ps.user_line, ps.user_function"
		" FROM events e LEFT JOIN py_stacks ps ON ps.id = e.py_stack_id"
		" WHERE e.id > ?1 AND e.id < ?7"
		" AND e.source IN ('cuda', 'driver', 'graph')"
		" AND (?2 = 0 OR e.pid = ?2) AND (?3 = 0 OR e.tid = ?3)"
		" AND e.wall_ns <= ?5 AND e.wall_ns + e.duration_ns >= ?4 ORDER BY e.id LIMIT ?8",
		"SELECT c.id, " CW_CALL_WALL ", c.dur, t.pid, t.tid, t.comm, o.op, c.ret,"
		" (SELECT s.text FROM strings s WHERE s.id = c.s), ps.user_file, ps.user_line, ps.user_function"
		" FROM " CW_CALLS_FROM " CROSS JOIN call_ops o ON o.id = c.op LEFT JOIN py_stacks ps ON ps.id = c.pystack"
		" WHERE c.id > ?1 AND c.id < ?7"
		" AND o.source IN ('cuda', 'driver', 'graph')"
		" AND (?2 = 0 OR t.pid = ?2) AND (?3 = 0 OR t.tid = ?3)"
		" AND " CW_CALL_WALL " <= ?5 AND " CW_CALL_WALL " + c.dur >= ?4 ORDER BY c.id LIMIT ?8",
	},
	/* Through events_slow; on v7 calls_slow and kevents' events_slow. */
	[CW_READ_SLOWEST_EVENT] = {
		"SELECT id FROM events WHERE op = ?1 AND anomalous = 1 AND (?2 = 0 OR pid = ?2)"
		" AND (?3 = 0 OR wall_ns >= ?3) AND (?4 = 0 OR wall_ns < ?4)"
		" ORDER BY duration_ns DESC LIMIT 1",
		"SELECT id FROM (SELECT * FROM (SELECT c.id AS id, c.dur AS d FROM " CW_CALLS_FROM
		" WHERE " CW_CALL_OP_IS("?1") " AND c.anomalous = 1 AND (?2 = 0 OR t.pid = ?2)"
		" AND (?3 = 0 OR " CW_CALL_WALL " >= ?3) AND (?4 = 0 OR " CW_CALL_WALL " < ?4)"
		" ORDER BY c.dur DESC LIMIT 1)"
		" UNION ALL SELECT * FROM (SELECT id, duration_ns FROM kevents WHERE op = ?1 AND anomalous = 1"
		" AND (?2 = 0 OR pid = ?2) AND (?3 = 0 OR wall_ns >= ?3) AND (?4 = 0 OR wall_ns < ?4)"
		" ORDER BY duration_ns DESC LIMIT 1))"
		" ORDER BY d DESC, id DESC LIMIT 1",
	},
	[CW_READ_STACKS] = {
		STACKS_SQL("events"),
		STACKS_SQL("(SELECT c.stack AS stack_id, c.pystack AS py_stack_id, c.dur AS duration_ns, c.id AS id,"
			   " o.op AS op, t.pid AS pid FROM " CW_CALLS_FROM " CROSS JOIN call_ops o ON o.id = c.op"
			   " UNION ALL SELECT stack_id, py_stack_id, duration_ns, id, op, pid FROM kevents)"),
	},
	/* On v7 a call's pid and cgroup are its thread row's, so the thread
	 * rows that still hold a call (a pruned or moved call leaves its row)
	 * and the kernel-side events answer without a scan of every call
	 * through the events view. */
	[CW_READ_CGROUP_PIDS] = {
		"SELECT DISTINCT pid FROM events WHERE cgroup_id = ?1",
		"SELECT t.pid FROM call_threads t WHERE t.cgroup_id = ?1"
		" AND EXISTS (SELECT 1 FROM calls c WHERE c.th = t.id)"
		" UNION ALL SELECT DISTINCT pid FROM kevents WHERE cgroup_id = ?1",
	},
	/* On v7 the slow calls through calls_slow by op id, any call through
	 * its thread rows by (node, pid). */
	[CW_READ_SLOW_CGROUP] = {
		"SELECT cgroup_id FROM events WHERE op = ?3 AND anomalous = 1 AND node = ?1 AND pid = ?2"
		" AND cgroup_id > 0 LIMIT 1",
		"SELECT cgroup_id FROM (SELECT t.cgroup_id FROM " CW_CALLS_FROM " WHERE " CW_CALL_OP_IS("?3")
		" AND c.anomalous = 1 AND t.node = ?1 AND t.pid = ?2 AND t.cgroup_id > 0 LIMIT 1)"
		" UNION ALL SELECT * FROM (SELECT cgroup_id FROM kevents WHERE op = ?3 AND anomalous = 1 AND node = ?1"
		" AND pid = ?2 AND cgroup_id > 0 LIMIT 1) LIMIT 1",
	},
	[CW_READ_PID_CGROUP] = {
		"SELECT cgroup_id FROM events WHERE node = ?1 AND pid = ?2 AND cgroup_id > 0 LIMIT 1",
		"SELECT cgroup_id FROM call_threads WHERE node = ?1 AND pid = ?2 AND cgroup_id > 0"
		" UNION ALL SELECT cgroup_id FROM kevents WHERE node = ?1 AND pid = ?2 AND cgroup_id > 0 LIMIT 1",
	},
	/* The summary's scans: on v7 calls and kevents read directly, only
	 * the columns wanted (the events view also looks up each call's
	 * detail text and arguments: several times the scan). Per tenant:
	 * the cgroups row of each call's cgroup (by its primary key), whose
	 * rowid stands for it in the scan. */
	[CW_READ_SUMMARY_WINDOW] = {
		"SELECT min(wall_ns) / 1000000000, max(wall_ns) / 1000000000 FROM events",
		"SELECT min(w) / 1000000000, max(w) / 1000000000 FROM (SELECT " CW_CALL_WALL " AS w FROM " CW_CALLS_FROM
		" UNION ALL SELECT wall_ns FROM kevents)",
	},
	[CW_READ_SUMMARY_EVENTS] = {
		"SELECT source, op, coalesce(py_stack_id, 0), duration_ns, pid, ret FROM events"
		" WHERE wall_ns >= ?1",
		"SELECT o.source, o.op, coalesce(c.pystack, 0), c.dur, t.pid, c.ret FROM " CW_CALLS_FROM
		" CROSS JOIN call_ops o ON o.id = c.op WHERE " CW_CALL_WALL " >= ?1"
		" UNION ALL SELECT source, op, coalesce(py_stack_id, 0), duration_ns, pid, ret FROM kevents WHERE wall_ns >= ?1",
	},
	[CW_READ_SUMMARY_EVENTS_TENANT] = {
		"SELECT e.source, e.op, coalesce(e.py_stack_id, 0), e.duration_ns, e.pid,"
		" c.rowid, e.node, e.cgroup_id, c.tenant, e.ret FROM events e LEFT JOIN cgroups c"
		" ON c.node = e.node AND c.cgroup_id = e.cgroup_id WHERE e.wall_ns >= ?1",
		"SELECT o.source, o.op, coalesce(c.pystack, 0), c.dur, t.pid, g.rowid, t.node, t.cgroup_id, g.tenant, c.ret"
		" FROM " CW_CALLS_FROM " CROSS JOIN call_ops o ON o.id = c.op"
		" LEFT JOIN cgroups g ON g.node = t.node AND g.cgroup_id = t.cgroup_id WHERE " CW_CALL_WALL " >= ?1"
		" UNION ALL SELECT e.source, e.op, coalesce(e.py_stack_id, 0), e.duration_ns, e.pid, g.rowid, e.node,"
		" e.cgroup_id, g.tenant, e.ret FROM kevents e LEFT JOIN cgroups g ON g.node = e.node AND g.cgroup_id = e.cgroup_id"
		" WHERE e.wall_ns >= ?1",
	},
};

int cw_store_read_sql(sqlite3 *db, enum cw_read r, const char **sql)
{
	int narrow;

	*sql = NULL;
	if ((unsigned)r >= CW_READ_COUNT)
		return -EINVAL;
	if ((narrow = cw_store_is_narrow(db)) < 0)
		return narrow;
	*sql = reads[r][narrow];
	return 0;
}

/* [read][0]: kevents; [read][1]: calls (a traced call's op, schema v7),
 * through calls_slow by (op id, duration). */
static const char *const op_reads[CW_OP_READ_COUNT][2] = {
	[CW_OP_READ_SLOWEST] = {
		"SELECT mono_ns, duration_ns, wall_ns, pid, tid, comm, device, py_stack_id, id, stack_id, ret IS NULL"
		" FROM kevents WHERE op = ?1 AND anomalous = 1 AND duration_ns >= ?2 AND node = ?3"
		" AND wall_ns BETWEEN ?4 AND ?5 AND (?6 = 0 OR pid = ?6) ORDER BY duration_ns DESC LIMIT ?7",
		"SELECT " CW_CALL_MONO ", c.dur, " CW_CALL_WALL ", t.pid, t.tid, t.comm, t.device, c.pystack, c.id, c.stack,"
		" c.ret IS NULL FROM " CW_CALLS_FROM " WHERE " CW_CALL_OP_IS("?1") " AND c.anomalous = 1 AND c.dur >= ?2"
		" AND t.node = ?3 AND " CW_CALL_WALL " BETWEEN ?4 AND ?5 AND (?6 = 0 OR t.pid = ?6)"
		" ORDER BY c.dur DESC LIMIT ?7",
	},
	[CW_OP_READ_FIRST] = {
		"SELECT mono_ns, duration_ns, wall_ns, pid, tid, comm, device, py_stack_id, id, stack_id, ret IS NULL"
		" FROM kevents WHERE id BETWEEN ?8 AND ?9 AND op = ?1 AND duration_ns >= ?2 AND node = ?3"
		" AND wall_ns BETWEEN ?4 AND ?5 AND (?6 = 0 OR pid = ?6) AND anomalous = 0"
		" ORDER BY id LIMIT ?7",
		"SELECT " CW_CALL_MONO ", c.dur, " CW_CALL_WALL ", t.pid, t.tid, t.comm, t.device, c.pystack, c.id, c.stack,"
		" c.ret IS NULL FROM " CW_CALLS_FROM " WHERE c.id BETWEEN ?8 AND ?9 AND " CW_CALL_OP_IS("?1") " AND c.dur >= ?2"
		" AND t.node = ?3 AND " CW_CALL_WALL " BETWEEN ?4 AND ?5 AND (?6 = 0 OR t.pid = ?6) AND c.anomalous = 0"
		" ORDER BY c.id LIMIT ?7",
	},
	[CW_OP_READ_IDENTITY] = {
		"SELECT duration_ns, pid, tid, comm, py_stack_id, stack_id FROM kevents"
		" WHERE op = ?1 AND anomalous = 1 AND node = ?2 AND wall_ns BETWEEN ?3 AND ?4"
		" AND (?5 = 0 OR pid = ?5) AND ?6 <= ?7 ORDER BY duration_ns DESC LIMIT 256",
		"SELECT c.dur, t.pid, t.tid, t.comm, c.pystack, c.stack FROM " CW_CALLS_FROM
		" WHERE " CW_CALL_OP_IS("?1") " AND c.anomalous = 1 AND t.node = ?2 AND " CW_CALL_WALL " BETWEEN ?3 AND ?4"
		" AND (?5 = 0 OR t.pid = ?5) AND ?6 <= ?7 ORDER BY c.dur DESC LIMIT 256",
	},
	/* From calls alone: the view's compound would be sorted whole for
	 * its ORDER BY id. */
	[CW_OP_READ_IDENTITY_RANGE] = {
		"SELECT duration_ns, pid, tid, comm, py_stack_id, stack_id FROM kevents"
		" WHERE id BETWEEN ?6 AND ?7 AND op = ?1 AND node = ?2 AND wall_ns BETWEEN ?3 AND ?4"
		" AND (?5 = 0 OR pid = ?5) ORDER BY id LIMIT 256",
		"SELECT c.dur, t.pid, t.tid, t.comm, c.pystack, c.stack FROM " CW_CALLS_FROM
		" WHERE c.id BETWEEN ?6 AND ?7 AND " CW_CALL_OP_IS("?1") " AND t.node = ?2 AND " CW_CALL_WALL
		" BETWEEN ?3 AND ?4 AND (?5 = 0 OR t.pid = ?5) ORDER BY c.id LIMIT 256",
	},
	[CW_OP_READ_CALL_TOTALS] = {
		"SELECT count(*), count(*), max(id) FROM kevents WHERE id BETWEEN ?4 AND ?5 AND op = ?1 AND node = ?2"
		" AND pid = ?3 AND coalesce(ret, 0) = 0 AND source IN ('cuda','driver','nccl','graph')",
		"SELECT count(*), count(*), max(c.id) FROM calls c"
		" WHERE c.id BETWEEN ?4 AND ?5 AND c.op IN (SELECT id FROM call_ops WHERE op = ?1)"
		" AND coalesce(c.ret, 0) = 0 AND c.th IN (SELECT id FROM call_threads WHERE node = ?2 AND pid = ?3)",
	},
};

int cw_store_op_read_sql(sqlite3 *db, const char *op, enum cw_op_read r, const char **sql)
{
	int call_op;

	*sql = NULL;
	if ((unsigned)r >= CW_OP_READ_COUNT)
		return -EINVAL;
	if ((call_op = cw_store_call_op(db, op)) < 0)
		return call_op;
	*sql = op_reads[r][call_op > 0];
	return 0;
}
