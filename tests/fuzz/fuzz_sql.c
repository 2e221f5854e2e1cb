/* Fuzzes the SQL front door (store/ro_query.c with ro_guard.c): arbitrary
 * statement text, as `query`, /api/v1/query and MCP run_sql pass it, on a
 * small causeway database with the real connection (authorizer, limits,
 * bounded functions, watchdog, heap bound, result cap). Invariants: no
 * crash or sanitizer report, every statement ends within its time limit
 * plus a margin (the bound on one function call, larger under the
 * sanitizers), and the database is never written. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/ro_query.h"
#include "store/store.h"
#include "util/timeutil.h"

#define LIMIT_NS (300ULL * 1000000ULL)
#define MARGIN_NS (3ULL * 1000000000ULL)

static char path[64];
static struct cw_ro_db *db;
static struct stat before;

static void make_db(void)
{
	struct cw_store *st;
	char err[256];
	int fd, i;

	strcpy(path, "/tmp/cw-fuzz-sql-XXXXXX");
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	if (cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)))
		abort();
	for (i = 0; i < 50; i++) {
		char sql[512];

		snprintf(sql, sizeof(sql),
			 "INSERT INTO events (node, seq, wall_ns, mono_ns, pid, tid, source, op, duration_ns, detail)"
			 " VALUES ('n%d', %d, %d, %d, %d, %d, 'cuda', '%s', %d, 'k\"%d\\x')",
			 i % 3, i, 1000 + i, i, 100 + i % 4, 200 + i, i % 2 ? "cudaMalloc" : "cudaMemcpy",
			 (i + 1) * 1000, i);
		if (cw_exec(st->db, sql))
			abort();
	}
	cw_store_close(st);
	if (cw_ro_open(&db, path, err, sizeof(err)) || stat(path, &before))
		abort();
}

static int row(void *arg, int ncols, const char *const *names, const struct cw_ro_value *vals)
{
	size_t *bytes = arg;
	int i;

	for (i = 0; i < ncols; i++) {
		json_t *j = cw_ro_value_json(&vals[i]);

		*bytes += cw_ro_value_out_bytes(names[i], &vals[i]);
		json_decref(j);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_ro_query_limits lim = { LIMIT_NS, 1000 };
	struct cw_ro_value param = { .type = CW_RO_INT, .i = 3 };
	struct cw_ro_query_info info;
	struct stat after;
	size_t bytes = 0;
	char err[1024], *sql;
	uint64_t t0;

	if (!db)
		make_db();
	sql = malloc(size + 1);
	if (!sql)
		return 0;
	memcpy(sql, data, size);
	sql[size] = '\0';
	t0 = cw_monotonic_ns();
	/* One bound parameter when the text asks for exactly one. */
	cw_ro_exec(db, sql, &param, strstr(sql, "?") ? 1 : 0, &lim, row, &bytes, &info, err, sizeof(err));
	if (cw_monotonic_ns() - t0 > LIMIT_NS + MARGIN_NS)
		__builtin_trap();
	free(sql);
	if (stat(path, &after) || after.st_size != before.st_size || after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
	    after.st_mtim.tv_nsec != before.st_mtim.tv_nsec)
		__builtin_trap();
	return 0;
}
