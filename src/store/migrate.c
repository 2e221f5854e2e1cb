#include "store/migrate.h"

#include <errno.h>
#include <stdio.h>

#include "store/sqlite_util.h"

/* schema.sql, embedded by the Makefile as a C string (build/gen/schema_sql.c). */
extern const char cw_schema_v1_sql[];

/* v2: block I/O requests by time, so explain reads the requests in flight
 * during blocked slow calls with an index seek instead of scanning every
 * event of the window. Partial: CUDA calls (nearly all rows) pay nothing. */
static const char schema_v2_sql[] =
	"CREATE INDEX events_io ON events (node, wall_ns) WHERE source = 'io';";

/* Tenants (docs/tenants.md): the identity of every cgroup seen, when it
 * was first and last seen, per-cgroup pressure samples, and the views the
 * per-tenant queries read (containers, cuda_events, nccl_events). One
 * self-contained step: it only adds. */
static const char schema_tenants_sql[] =
	"ALTER TABLE cgroups ADD COLUMN runtime TEXT;"
	"ALTER TABLE cgroups ADD COLUMN container_id TEXT;"
	"ALTER TABLE cgroups ADD COLUMN pod TEXT;"
	"ALTER TABLE cgroups ADD COLUMN pod_uid TEXT;"
	"ALTER TABLE cgroups ADD COLUMN namespace TEXT;"
	"ALTER TABLE cgroups ADD COLUMN qos TEXT;"
	"ALTER TABLE cgroups ADD COLUMN slurm_job TEXT;"
	"ALTER TABLE cgroups ADD COLUMN slurm_step TEXT;"
	"ALTER TABLE cgroups ADD COLUMN unit TEXT;"
	"ALTER TABLE cgroups ADD COLUMN tenant TEXT;"
	"ALTER TABLE cgroups ADD COLUMN first_seen_wall_ns INTEGER;"
	"ALTER TABLE cgroups ADD COLUMN last_seen_wall_ns INTEGER;"
	"CREATE TABLE cgroup_pressure ("
	" node TEXT NOT NULL, session_id INTEGER, cgroup_id INTEGER NOT NULL,"
	" wall_ns INTEGER NOT NULL, mono_ns INTEGER NOT NULL,"
	" cpu_some_us INTEGER, cpu_full_us INTEGER, memory_some_us INTEGER, memory_full_us INTEGER,"
	" io_some_us INTEGER, io_full_us INTEGER,"
	" cpu_some_avg10 REAL, memory_some_avg10 REAL, io_some_avg10 REAL,"
	" nr_periods INTEGER, nr_throttled INTEGER, throttled_usec INTEGER,"
	" quota_us INTEGER, period_us INTEGER);"
	"CREATE INDEX cgroup_pressure_cg ON cgroup_pressure (node, cgroup_id, wall_ns);"
	"CREATE VIEW containers AS SELECT node, cgroup_id, coalesce(container_id, CASE WHEN slurm_job IS NOT NULL"
	" THEN 'slurm-job-' || slurm_job END, path) AS container_id, runtime, pod, namespace, pod_uid, qos,"
	" slurm_job, slurm_step, unit, tenant, path, first_seen_wall_ns, last_seen_wall_ns FROM cgroups;"
	"CREATE VIEW cuda_events AS SELECT *, CASE WHEN (op LIKE 'cudaLaunchKernel%' OR op LIKE 'cuLaunchKernel%')"
	" AND detail IS NOT NULL THEN detail ELSE op END AS kernel_name FROM events"
	" WHERE source IN ('cuda', 'driver', 'graph');"
	"CREATE VIEW nccl_events AS SELECT *, op AS kernel_name FROM events WHERE source = 'nccl';";

/* v4 (after the tenants step): the rare kernel-side events explain's oom_kill, network and
 * host-memory rules read, by time: TCP retransmits and OOM kills per node,
 * page-allocation records per process. Partial, so every other row (CUDA
 * calls, nearly all of them) pays only the test of its op; queries must
 * name the op as a literal to use them (src/store/rare_events.c).
 * events_retx covers what the network rule reads (a lossy link can leave
 * hundreds of thousands), so it never touches the table (op is a column
 * too: SQLite 3.40 does not count the partial WHERE as covered). */
static const char schema_layers_sql[] =
	"CREATE INDEX IF NOT EXISTS events_retx ON events (node, wall_ns, mono_ns, pid, detail, op) WHERE op = 'tcp_retransmit';"
	"CREATE INDEX IF NOT EXISTS events_oom ON events (node, wall_ns) WHERE op = 'oom_kill';"
	"CREATE INDEX IF NOT EXISTS events_pagealloc ON events (node, pid, wall_ns) WHERE op = 'page_alloc';";

/* v5: GPU telemetry (docs/gpu.md, docs/schema.md): the devices NVML reports,
 * one sample per device per interval and per-process device memory.
 * Xid faults and training stalls are events (source 'gpu', 'stall').
 * Self-contained and idempotent (IF NOT EXISTS) so it can move to any
 * position in the list. */
static const char schema_gpu_sql[] =
	"CREATE TABLE IF NOT EXISTS gpu_devices ("
	" node TEXT NOT NULL, uuid TEXT NOT NULL, device INTEGER NOT NULL, pci_bus_id TEXT, name TEXT,"
	" memory_total INTEGER, power_limit_mw INTEGER, max_sm_mhz INTEGER, max_mem_mhz INTEGER,"
	" mig INTEGER, parent INTEGER, driver TEXT, first_wall_ns INTEGER,"
	" PRIMARY KEY (node, uuid));"
	"CREATE TABLE IF NOT EXISTS gpu_samples ("
	" id INTEGER PRIMARY KEY, node TEXT NOT NULL, session_id INTEGER, device INTEGER NOT NULL, uuid TEXT,"
	" mono_ns INTEGER NOT NULL, wall_ns INTEGER NOT NULL,"
	" gpu_util INTEGER, mem_util INTEGER, mem_used INTEGER, mem_free INTEGER, mem_reserved INTEGER,"
	" mem_total INTEGER, temp_gpu INTEGER, temp_mem INTEGER, power_mw INTEGER, energy_mj INTEGER,"
	" sm_mhz INTEGER, mem_mhz INTEGER, clock_reasons INTEGER, ecc_sbe INTEGER, ecc_dbe INTEGER,"
	" pcie_replay INTEGER, retired_sbe INTEGER, retired_dbe INTEGER, remap_corr INTEGER,"
	" remap_unc INTEGER, remap_pending INTEGER, remap_failure INTEGER, nvlink_errors INTEGER);"
	"CREATE INDEX IF NOT EXISTS gpu_samples_time ON gpu_samples (node, wall_ns);"
	"CREATE TABLE IF NOT EXISTS gpu_processes ("
	" id INTEGER PRIMARY KEY, node TEXT NOT NULL, session_id INTEGER, device INTEGER NOT NULL,"
	" mono_ns INTEGER NOT NULL, wall_ns INTEGER NOT NULL, pid INTEGER NOT NULL,"
	" used_bytes INTEGER, sm_util INTEGER, mem_util INTEGER);"
	"CREATE INDEX IF NOT EXISTS gpu_processes_time ON gpu_processes (node, wall_ns);";

/* v6: NCCL communicators and calls (pipeline/nccl_track.c), the input of
 * the arrival analysis (analysis/rules/nccl_arrival.c). Calls are keyed
 * by communicator id (shared by the communicator's ranks: a hash of its
 * ncclUniqueId) and sequence number, so one rank's n-th collective meets
 * every other rank's n-th on any node. */
static const char schema_nccl_sql[] =
	"CREATE TABLE IF NOT EXISTS nccl_comms ("
	" node TEXT NOT NULL, pid INTEGER NOT NULL,"
	" comm INTEGER NOT NULL,"      /* the ncclComm_t handle in the process */
	" comm_id INTEGER,"            /* shared by every rank; NULL unknown */
	" nranks INTEGER, rank INTEGER,"
	" parent_id INTEGER,"          /* comm_id of the parent (ncclCommSplit) */
	" op TEXT,"                    /* the call that created it */
	" created_wall_ns INTEGER, destroyed_wall_ns INTEGER,"
	" async_error INTEGER,"        /* last nonzero ncclCommGetAsyncError */
	" PRIMARY KEY (node, pid, comm));"
	"CREATE TABLE IF NOT EXISTS nccl_calls ("
	" id INTEGER PRIMARY KEY, node TEXT NOT NULL, session_id INTEGER,"
	" pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" comm INTEGER, comm_id INTEGER, rank INTEGER, nranks INTEGER,"
	" seq INTEGER NOT NULL,"       /* per communicator (p2p: per peer) */
	" op TEXT NOT NULL, count INTEGER, datatype INTEGER, bytes INTEGER,"
	" redop INTEGER, peer INTEGER, stream INTEGER,"
	" wall_ns INTEGER NOT NULL, mono_ns INTEGER NOT NULL,"
	" duration_ns INTEGER NOT NULL, ret INTEGER,"
	" done_wall_ns INTEGER,"       /* completion: end of the synchronization that waited for it */
	" wait_ns INTEGER);"           /* that synchronization's duration; NULL: none seen */
	"CREATE INDEX IF NOT EXISTS nccl_calls_time ON nccl_calls (wall_ns);"
	/* One collective's rows on every rank (export's arrows, merge's
	 * offsets). */
	"CREATE INDEX IF NOT EXISTS nccl_calls_seq ON nccl_calls (comm_id, seq);";

/* v7: narrow call rows (docs/schema.md, "Narrow rows"). Traced calls
 * (sources cuda, driver, graph, nccl: nearly every row) move to `calls`,
 * whose row keeps only what changes from call to call; what is constant
 * for a thread over a stretch of time (node, session, pid, tid, cgroup,
 * comm, device, the monotonic->wall offset) is one `call_threads` row, the
 * (source, op) pair one `call_ops` row, a detail text one `strings` row.
 * A `calls` row's monotonic start is its thread row's base plus `t`
 * (within +-2^31 ns of the base, so it fits 4 bytes); its wall-clock start
 * adds the thread row's offset. Kernel-side events (block I/O, network,
 * memory, process, GPU findings: few) keep the full row in `kevents`,
 * with the partial indexes of v2 and v4. The view `events` puts both back
 * together with the documented columns, and its INSTEAD OF triggers route
 * inserts and deletes, so every query and every writer of the public
 * table keeps working. Ids are one sequence over both tables. */
static const char schema_narrow_sql[] =
	"CREATE TABLE call_threads ("
	" id INTEGER PRIMARY KEY, node TEXT NOT NULL, session_id INTEGER, pid INTEGER NOT NULL,"
	" tid INTEGER NOT NULL, cgroup_id INTEGER, comm TEXT, device INTEGER,"
	" mono_base INTEGER NOT NULL, wall_off INTEGER NOT NULL);"
	"CREATE INDEX call_threads_tid ON call_threads (tid, mono_base);"
	"CREATE INDEX call_threads_pid ON call_threads (node, pid);"
	"CREATE TABLE call_ops (id INTEGER PRIMARY KEY, source TEXT NOT NULL, op TEXT NOT NULL, UNIQUE (source, op));"
	"CREATE TABLE strings (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
	"CREATE TABLE calls ("
	" id INTEGER PRIMARY KEY, th INTEGER NOT NULL, op INTEGER NOT NULL, t INTEGER NOT NULL, dur INTEGER NOT NULL,"
	" a0 INTEGER, a1 INTEGER, a2 INTEGER, a3 INTEGER, bytes INTEGER, s INTEGER, ret INTEGER,"
	" stack INTEGER, pystack INTEGER, anomalous INTEGER NOT NULL DEFAULT 0, sq INTEGER, ar INTEGER);"
	/* A repeated argument tuple (a kernel launched again with the same
	 * grid) is one row here, named by calls.ar; a0..a3 are then NULL. */
	"CREATE TABLE call_args (id INTEGER PRIMARY KEY, a0 INTEGER, a1 INTEGER, a2 INTEGER, a3 INTEGER);"
	"CREATE TABLE kevents ("
	" id INTEGER PRIMARY KEY, node TEXT NOT NULL, seq INTEGER NOT NULL, session_id INTEGER,"
	" wall_ns INTEGER NOT NULL, mono_ns INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" cgroup_id INTEGER, comm TEXT, source TEXT NOT NULL, op TEXT NOT NULL, duration_ns INTEGER NOT NULL DEFAULT 0,"
	" arg0 INTEGER, arg1 INTEGER, arg2 INTEGER, arg3 INTEGER, bytes INTEGER, detail TEXT, ret INTEGER,"
	" device INTEGER, stack_id INTEGER, py_stack_id INTEGER, anomalous INTEGER NOT NULL DEFAULT 0);"
	"INSERT INTO kevents SELECT id, node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op,"
	" duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id, py_stack_id, anomalous"
	" FROM events WHERE source NOT IN ('cuda', 'driver', 'graph', 'nccl') ORDER BY id;"
	"INSERT INTO call_ops (source, op) SELECT DISTINCT source, op FROM events"
	" WHERE source IN ('cuda', 'driver', 'graph', 'nccl');"
	"INSERT INTO strings (text) SELECT DISTINCT detail FROM events"
	" WHERE source IN ('cuda', 'driver', 'graph', 'nccl') AND detail IS NOT NULL;"
	/* One thread row per thread identity and 2^31 ns of monotonic time. */
	"INSERT INTO call_threads (node, session_id, pid, tid, cgroup_id, comm, device, mono_base, wall_off)"
	" SELECT DISTINCT node, session_id, pid, tid, cgroup_id, comm, device, (mono_ns >> 31) << 31, wall_ns - mono_ns"
	" FROM events WHERE source IN ('cuda', 'driver', 'graph', 'nccl');"
	"INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, stack, pystack, anomalous, sq)"
	" SELECT e.id, t.id, o.id, e.mono_ns - t.mono_base, e.duration_ns, e.arg0, e.arg1, e.arg2, e.arg3, e.bytes,"
	" (SELECT s.id FROM strings s WHERE s.text = e.detail), e.ret, e.stack_id, e.py_stack_id, e.anomalous,"
	" CASE WHEN e.seq = e.id THEN NULL ELSE e.seq END"
	" FROM events e JOIN call_ops o ON o.source = e.source AND o.op = e.op"
	" JOIN call_threads t ON t.tid = e.tid AND t.mono_base = (e.mono_ns >> 31) << 31 AND t.pid = e.pid"
	" AND t.node = e.node AND t.session_id IS e.session_id AND t.cgroup_id IS e.cgroup_id AND t.comm IS e.comm"
	" AND t.device IS e.device AND t.wall_off = e.wall_ns - e.mono_ns"
	" WHERE e.source IN ('cuda', 'driver', 'graph', 'nccl') ORDER BY e.id;"
	"DROP TABLE events;"
	"CREATE INDEX calls_slow ON calls (op, dur) WHERE anomalous = 1;"
	"CREATE INDEX events_slow ON kevents (op, duration_ns) WHERE anomalous = 1;"
	"CREATE INDEX events_io ON kevents (node, wall_ns) WHERE source = 'io';"
	"CREATE INDEX events_retx ON kevents (node, wall_ns, mono_ns, pid, detail, op) WHERE op = 'tcp_retransmit';"
	"CREATE INDEX events_oom ON kevents (node, wall_ns) WHERE op = 'oom_kill';"
	"CREATE INDEX events_pagealloc ON kevents (node, pid, wall_ns) WHERE op = 'page_alloc';"
	"CREATE VIEW events AS"
	" SELECT c.id AS id, t.node AS node, coalesce(c.sq, c.id) AS seq, t.session_id AS session_id,"
	" t.mono_base + c.t + t.wall_off AS wall_ns, t.mono_base + c.t AS mono_ns, t.pid AS pid, t.tid AS tid,"
	" t.cgroup_id AS cgroup_id, t.comm AS comm, o.source AS source, o.op AS op, c.dur AS duration_ns,"
	" CASE WHEN c.ar IS NULL THEN c.a0 ELSE a.a0 END AS arg0, CASE WHEN c.ar IS NULL THEN c.a1 ELSE a.a1 END AS arg1,"
	" CASE WHEN c.ar IS NULL THEN c.a2 ELSE a.a2 END AS arg2, CASE WHEN c.ar IS NULL THEN c.a3 ELSE a.a3 END AS arg3,"
	" c.bytes AS bytes,"
	" (SELECT s.text FROM strings s WHERE s.id = c.s) AS detail, c.ret AS ret, t.device AS device,"
	" c.stack AS stack_id, c.pystack AS py_stack_id, c.anomalous AS anomalous"
	" FROM calls c CROSS JOIN call_threads t ON t.id = c.th CROSS JOIN call_ops o ON o.id = c.op"
	" LEFT JOIN call_args a ON a.id = c.ar"
	" UNION ALL"
	" SELECT id, node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op, duration_ns,"
	" arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id, py_stack_id, anomalous FROM kevents;"
	/* Writers of the public table (merge, tests, a user's own tools):
	 * a call goes to calls through its thread, op and string rows, any
	 * other event to kevents; an id left NULL takes the next of both. */
	"CREATE TRIGGER events_insert INSTEAD OF INSERT ON events BEGIN"
	" INSERT INTO kevents (id, node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op,"
	" duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id, py_stack_id, anomalous)"
	" SELECT coalesce(NEW.id, (SELECT max(coalesce((SELECT max(id) FROM calls), 0),"
	" coalesce((SELECT max(id) FROM kevents), 0)) + 1)), NEW.node, NEW.seq, NEW.session_id, NEW.wall_ns,"
	" NEW.mono_ns, NEW.pid, NEW.tid, NEW.cgroup_id, NEW.comm, NEW.source, NEW.op, coalesce(NEW.duration_ns, 0),"
	" NEW.arg0, NEW.arg1, NEW.arg2, NEW.arg3, NEW.bytes, NEW.detail, NEW.ret, NEW.device, NEW.stack_id,"
	" NEW.py_stack_id, coalesce(NEW.anomalous, 0)"
	" WHERE NEW.source NOT IN ('cuda', 'driver', 'graph', 'nccl');"
	" INSERT OR IGNORE INTO call_ops (source, op) SELECT NEW.source, NEW.op"
	" WHERE NEW.source IN ('cuda', 'driver', 'graph', 'nccl');"
	" INSERT OR IGNORE INTO strings (text) SELECT NEW.detail"
	" WHERE NEW.source IN ('cuda', 'driver', 'graph', 'nccl') AND NEW.detail IS NOT NULL;"
	" INSERT INTO call_threads (node, session_id, pid, tid, cgroup_id, comm, device, mono_base, wall_off)"
	" SELECT NEW.node, NEW.session_id, NEW.pid, NEW.tid, NEW.cgroup_id, NEW.comm, NEW.device,"
	" (NEW.mono_ns >> 31) << 31, NEW.wall_ns - NEW.mono_ns"
	" WHERE NEW.source IN ('cuda', 'driver', 'graph', 'nccl') AND NOT EXISTS (SELECT 1 FROM call_threads t"
	" WHERE t.tid = NEW.tid AND t.mono_base = (NEW.mono_ns >> 31) << 31 AND t.pid = NEW.pid AND t.node = NEW.node"
	" AND t.session_id IS NEW.session_id AND t.cgroup_id IS NEW.cgroup_id AND t.comm IS NEW.comm"
	" AND t.device IS NEW.device AND t.wall_off = NEW.wall_ns - NEW.mono_ns);"
	" INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, stack, pystack, anomalous, sq)"
	" SELECT x.id, t.id, (SELECT o.id FROM call_ops o WHERE o.source = NEW.source AND o.op = NEW.op),"
	" NEW.mono_ns - t.mono_base, coalesce(NEW.duration_ns, 0), NEW.arg0, NEW.arg1, NEW.arg2, NEW.arg3, NEW.bytes,"
	" (SELECT s.id FROM strings s WHERE s.text = NEW.detail), NEW.ret, NEW.stack_id, NEW.py_stack_id,"
	" coalesce(NEW.anomalous, 0), CASE WHEN NEW.seq = x.id THEN NULL ELSE NEW.seq END"
	" FROM (SELECT coalesce(NEW.id, (SELECT max(coalesce((SELECT max(id) FROM calls), 0),"
	" coalesce((SELECT max(id) FROM kevents), 0)) + 1)) AS id) x, call_threads t"
	" WHERE NEW.source IN ('cuda', 'driver', 'graph', 'nccl') AND t.id = (SELECT max(t2.id) FROM call_threads t2"
	" WHERE t2.tid = NEW.tid AND t2.mono_base = (NEW.mono_ns >> 31) << 31 AND t2.pid = NEW.pid"
	" AND t2.node = NEW.node AND t2.session_id IS NEW.session_id AND t2.cgroup_id IS NEW.cgroup_id"
	" AND t2.comm IS NEW.comm AND t2.device IS NEW.device AND t2.wall_off = NEW.wall_ns - NEW.mono_ns);"
	" END;"
	/* An update changes what a call row holds itself; what its thread,
	 * op or string rows hold is shared with other calls and refused. */
	"CREATE TRIGGER events_update INSTEAD OF UPDATE ON events BEGIN"
	" SELECT RAISE(ABORT, 'events: a call''s thread, op, time or detail cannot be updated')"
	" WHERE EXISTS (SELECT 1 FROM calls WHERE id = OLD.id) AND (NEW.id IS NOT OLD.id OR NEW.node IS NOT OLD.node"
	" OR NEW.seq IS NOT OLD.seq OR NEW.session_id IS NOT OLD.session_id OR NEW.wall_ns IS NOT OLD.wall_ns"
	" OR NEW.mono_ns IS NOT OLD.mono_ns OR NEW.pid IS NOT OLD.pid OR NEW.tid IS NOT OLD.tid"
	" OR NEW.cgroup_id IS NOT OLD.cgroup_id OR NEW.comm IS NOT OLD.comm OR NEW.source IS NOT OLD.source"
	" OR NEW.op IS NOT OLD.op OR NEW.detail IS NOT OLD.detail OR NEW.device IS NOT OLD.device);"
	" UPDATE calls SET dur = NEW.duration_ns, a0 = NEW.arg0, a1 = NEW.arg1, a2 = NEW.arg2, a3 = NEW.arg3, ar = NULL,"
	" bytes = NEW.bytes, ret = NEW.ret, stack = NEW.stack_id, pystack = NEW.py_stack_id,"
	" anomalous = NEW.anomalous WHERE id = OLD.id;"
	" UPDATE kevents SET id = NEW.id, node = NEW.node, seq = NEW.seq, session_id = NEW.session_id,"
	" wall_ns = NEW.wall_ns, mono_ns = NEW.mono_ns, pid = NEW.pid, tid = NEW.tid, cgroup_id = NEW.cgroup_id,"
	" comm = NEW.comm, source = NEW.source, op = NEW.op, duration_ns = NEW.duration_ns, arg0 = NEW.arg0,"
	" arg1 = NEW.arg1, arg2 = NEW.arg2, arg3 = NEW.arg3, bytes = NEW.bytes, detail = NEW.detail, ret = NEW.ret,"
	" device = NEW.device, stack_id = NEW.stack_id, py_stack_id = NEW.py_stack_id, anomalous = NEW.anomalous"
	" WHERE id = OLD.id; END;"
	"CREATE TRIGGER events_delete INSTEAD OF DELETE ON events BEGIN"
	" DELETE FROM calls WHERE id = OLD.id; DELETE FROM kevents WHERE id = OLD.id; END;";

/* v8: the TID a Python stack was attributed through is a column of its
 * py_stacks row, filled from the frames' {"python_via": TID} marker (kept
 * in frames for readers of older versions). Only rows that carry the
 * marker are touched. */
static const char schema_pyvia_sql[] =
	"ALTER TABLE py_stacks ADD COLUMN python_via INTEGER;"
	"UPDATE py_stacks SET python_via = " CW_PYVIA_FROM_FRAMES("frames") " WHERE frames LIKE '%\"python_via\"%';";

/* v9: calls folded in the kernel (trace --capture summary) per process,
 * op and wall second: what events would have said per pid. The op-wide
 * aggregates count them too. */
static const char schema_folded_sql[] =
	"CREATE TABLE IF NOT EXISTS folded ("
	" node TEXT NOT NULL, pid INTEGER NOT NULL, source TEXT NOT NULL, op TEXT NOT NULL,"
	" second INTEGER NOT NULL, count INTEGER NOT NULL, sum_ns INTEGER NOT NULL, max_ns INTEGER NOT NULL,"
	" hist BLOB NOT NULL, PRIMARY KEY (node, op, pid, second, source));";
/* v10: failing calls apart from the latencies. A call that failed (its
 * code a failure of its API, gpu/call_errors.h) is counted in errors and
 * kept out of count, sum_ns, max_ns and hist, which describe the calls
 * that succeeded; rows written before v10 hold both in count. */
static const char schema_errors_sql[] = "ALTER TABLE aggregates ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;";

/* v11: inference serving (docs/schema.md). requests: one row per HTTP
 * request a traced server answered, pruned by the tiers (slow and failed
 * ones last); request_totals: per node, port, method, route and status,
 * the count and the cumulative duration and TTFT bucket counts on the
 * monitoring chapter's buckets (store/requests.h), updated in the
 * transaction of each request row and never pruned, so /metrics counters
 * never go back; engine_metrics: what a server's own /metrics said. The
 * bucket columns are cumulative (le), as Prometheus exposes them. */
#define REQ_BUCKET_COLS(p)                                                                                  \
	" " p "_le_10ms INTEGER NOT NULL DEFAULT 0, " p "_le_25ms INTEGER NOT NULL DEFAULT 0,"              \
	" " p "_le_50ms INTEGER NOT NULL DEFAULT 0, " p "_le_100ms INTEGER NOT NULL DEFAULT 0,"             \
	" " p "_le_250ms INTEGER NOT NULL DEFAULT 0, " p "_le_500ms INTEGER NOT NULL DEFAULT 0,"            \
	" " p "_le_1s INTEGER NOT NULL DEFAULT 0, " p "_le_2500ms INTEGER NOT NULL DEFAULT 0,"              \
	" " p "_le_5s INTEGER NOT NULL DEFAULT 0, " p "_le_10s INTEGER NOT NULL DEFAULT 0,"
static const char schema_requests_sql[] =
	"CREATE TABLE IF NOT EXISTS requests ("
	" id INTEGER PRIMARY KEY, node TEXT NOT NULL, session_id INTEGER, wall_ns INTEGER NOT NULL,"
	" mono_ns INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL, resp_tid INTEGER,"
	" cgroup_id INTEGER, comm TEXT, conn_id INTEGER NOT NULL, port INTEGER, method TEXT, path TEXT,"
	" status INTEGER, bytes_in INTEGER NOT NULL, bytes_out INTEGER NOT NULL, ttft_ns INTEGER,"
	" duration_ns INTEGER NOT NULL, streamed INTEGER NOT NULL DEFAULT 0,"
	" body_events INTEGER NOT NULL DEFAULT 0, itl_max_ns INTEGER, itl_mean_ns INTEGER,"
	" end_reason TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS requests_mono ON requests (mono_ns);"
	"CREATE TABLE IF NOT EXISTS request_totals ("
	" node TEXT NOT NULL, port INTEGER NOT NULL, method TEXT NOT NULL, route TEXT NOT NULL,"
	" status INTEGER NOT NULL, count INTEGER NOT NULL DEFAULT 0, duration_sum_ns INTEGER NOT NULL DEFAULT 0,"
	REQ_BUCKET_COLS("dur")
	" ttft_count INTEGER NOT NULL DEFAULT 0, ttft_sum_ns INTEGER NOT NULL DEFAULT 0,"
	REQ_BUCKET_COLS("ttft")
	" first_wall_ns INTEGER, last_wall_ns INTEGER,"
	" PRIMARY KEY (node, port, method, route, status));"
	"CREATE TABLE IF NOT EXISTS engine_metrics ("
	" node TEXT NOT NULL, session_id INTEGER, wall_ns INTEGER NOT NULL, pid INTEGER, port INTEGER,"
	" engine TEXT NOT NULL, name TEXT NOT NULL, value REAL NOT NULL);"
	"CREATE INDEX IF NOT EXISTS engine_metrics_name ON engine_metrics (name, wall_ns);";

/* Migration n turns version n into n+1. Version 0 is an empty file. */
static const char *const migrations[] = {
	cw_schema_v1_sql,
	schema_v2_sql,
	schema_tenants_sql,
	schema_layers_sql,
	schema_gpu_sql,
	schema_nccl_sql,
	schema_narrow_sql,
	schema_pyvia_sql,
	schema_folded_sql,
	schema_errors_sql,
	schema_requests_sql,
};
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == CW_SCHEMA_VERSION,
	       "one migration per schema version");

int cw_schema_version(sqlite3 *db, int *version)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(db, rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : cw_sqlite_db_errno(db, rc);
}

int cw_migrate(sqlite3 *db, int *found_version)
{
	return cw_migrate_to(db, CW_SCHEMA_VERSION, found_version);
}

int cw_migrate_to(sqlite3 *db, int target, int *found_version)
{
	char sql[64];
	int v, err;

	if (target < 1 || target > CW_SCHEMA_VERSION)
		return -EINVAL;
	err = cw_schema_version(db, &v);
	if (err)
		return err;
	*found_version = v;
	/* A negative version is no causeway file's, and would index the
	 * migrations from before their start. */
	if (v > CW_SCHEMA_VERSION || v < 0)
		return -EPROTO;
	if (v >= target)
		return 0;
	/* IMMEDIATE takes the write lock up front so two writers creating the
	 * same file cannot both migrate. */
	err = cw_exec(db, "BEGIN IMMEDIATE");
	if (err)
		return err;
	err = cw_schema_version(db, &v);
	if (err)
		goto fail;
	if (v < 0 || v > CW_SCHEMA_VERSION) {
		*found_version = v;
		err = -EPROTO;
		goto fail;
	}
	for (; v < target; v++) {
		err = cw_exec(db, migrations[v]);
		if (err)
			goto fail;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", target);
	err = cw_exec(db, sql);
	if (err)
		goto fail;
	return cw_exec(db, "COMMIT");
fail:
	/* SQLite may have rolled back already (a full disk, an I/O error). */
	if (!sqlite3_get_autocommit(db))
		cw_exec(db, "ROLLBACK");
	return err;
}
