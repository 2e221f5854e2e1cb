#include "store/migrate.h"

#include <errno.h>
#include <stdio.h>

#include "store/store.h"

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
 * name the op as a literal to use them (src/analysis/rare_events.c).
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

/* Migration n turns version n into n+1. Version 0 is an empty file. */
static const char *const migrations[] = {
	cw_schema_v1_sql,
	schema_v2_sql,
	schema_tenants_sql,
	schema_layers_sql,
	schema_gpu_sql,
	schema_nccl_sql,
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
	char sql[64];
	int v, err;

	err = cw_schema_version(db, &v);
	if (err)
		return err;
	*found_version = v;
	if (v > CW_SCHEMA_VERSION)
		return -EPROTO;
	if (v == CW_SCHEMA_VERSION)
		return 0;
	/* IMMEDIATE takes the write lock up front so two writers creating the
	 * same file cannot both migrate. */
	err = cw_exec(db, "BEGIN IMMEDIATE");
	if (err)
		return err;
	err = cw_schema_version(db, &v);
	if (err)
		goto fail;
	for (; v < CW_SCHEMA_VERSION; v++) {
		err = cw_exec(db, migrations[v]);
		if (err)
			goto fail;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", CW_SCHEMA_VERSION);
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
