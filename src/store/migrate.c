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

/* v3: NCCL communicators and calls (pipeline/nccl_track.c), the input of
 * the arrival analysis (analysis/rules/nccl_arrival.c). Calls are keyed
 * by communicator id (shared by the communicator's ranks: a hash of its
 * ncclUniqueId) and sequence number, so one rank's n-th collective meets
 * every other rank's n-th on any node. */
static const char schema_v3_nccl_sql[] =
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
	schema_v3_nccl_sql,
};
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == CW_SCHEMA_VERSION,
	       "one migration per schema version");

int cw_schema_version(sqlite3 *db, int *version)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : cw_sqlite_errno(rc);
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
	cw_exec(db, "ROLLBACK");
	return err;
}
