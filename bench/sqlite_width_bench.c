/* sqlite_width_bench: SQLite's own insert rate on this core as a function
 * of how many columns a row has, with the store's settings (16 KiB pages,
 * WAL, synchronous=NORMAL, 64 MiB cache), the writer's statement shape (32
 * rows per INSERT) and ~50,000-row transactions; every column an 8-byte
 * integer bound per row. It shows what a row as wide as the events table's
 * costs SQLite before causeway does anything (bench/RESULTS.md, "ingest").
 *   usage: sqlite_width_bench [ROWS] [WIDTH...]   (default 1000000 4 8 12 16 21) */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "util/timeutil.h"

#define ROWS_PER_INSERT 32
#define ROWS_PER_TXN 50016 /* a multiple of ROWS_PER_INSERT */
#define WIDTH_MAX 64

static int exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	fprintf(stderr, "sqlite_width_bench: %s: %s\n", sql, msg ? msg : "?");
	sqlite3_free(msg);
	return -1;
}

/* Rows per second for rows of width integer columns; < 0 on error. */
static double rate(long rows, int width)
{
	char path[] = "/tmp/cw-width-XXXXXX", ddl[4096], *sql;
	size_t off = 0, cap = (size_t)ROWS_PER_INSERT * (size_t)width * 8 + 256;
	sqlite3_stmt *ins = NULL;
	sqlite3 *db = NULL;
	uint64_t t0, t1;
	double r = -1;
	long i;
	int k, j, fd = mkstemp(path), err = 0;

	close(fd);
	unlink(path);
	sql = malloc(cap);
	if (!sql || sqlite3_open(path, &db) != SQLITE_OK ||
	    exec(db, "PRAGMA page_size = 16384; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
		     " PRAGMA cache_size = -65536"))
		goto out;
	off = (size_t)snprintf(ddl, sizeof(ddl), "CREATE TABLE t (id INTEGER PRIMARY KEY");
	for (j = 0; j < width; j++)
		off += (size_t)snprintf(ddl + off, sizeof(ddl) - off, ", c%d INTEGER", j);
	snprintf(ddl + off, sizeof(ddl) - off, ")");
	if (exec(db, ddl))
		goto out;
	off = (size_t)snprintf(sql, cap, "INSERT INTO t VALUES ");
	for (k = 0; k < ROWS_PER_INSERT; k++) {
		off += (size_t)snprintf(sql + off, cap - off, "%s(NULL", k ? "," : "");
		for (j = 0; j < width; j++)
			off += (size_t)snprintf(sql + off, cap - off, ",?");
		off += (size_t)snprintf(sql + off, cap - off, ")");
	}
	if (sqlite3_prepare_v2(db, sql, -1, &ins, NULL) != SQLITE_OK)
		goto out;
	t0 = cw_monotonic_ns();
	for (i = 0; i + ROWS_PER_INSERT <= rows && !err; i += ROWS_PER_INSERT) {
		if (i % ROWS_PER_TXN == 0)
			err |= exec(db, i ? "COMMIT; BEGIN" : "BEGIN");
		for (k = 0; k < ROWS_PER_INSERT; k++)
			for (j = 0; j < width; j++)
				sqlite3_bind_int64(ins, 1 + k * width + j, (i + k) * 1000LL + j);
		err |= sqlite3_step(ins) != SQLITE_DONE;
		sqlite3_reset(ins);
	}
	err |= exec(db, "COMMIT");
	t1 = cw_monotonic_ns();
	if (!err)
		r = (double)i / ((double)(t1 - t0) / 1e9);
out:
	sqlite3_finalize(ins);
	sqlite3_close(db);
	free(sql);
	cw_store_remove_files(path);
	return r;
}

int main(int argc, char **argv)
{
	static const int widths[] = { 4, 8, 12, 16, 21 };
	long rows = argc > 1 ? atol(argv[1]) : 1000000;
	int n = argc > 2 ? argc - 2 : (int)(sizeof(widths) / sizeof(widths[0])), i, w;
	double r;

	if (rows < ROWS_PER_INSERT) {
		fprintf(stderr, "usage: sqlite_width_bench [ROWS >= %d] [WIDTH...]\n", ROWS_PER_INSERT);
		return 2;
	}
	for (i = 0; i < n; i++) {
		w = argc > 2 ? atoi(argv[2 + i]) : widths[i];
		if (w < 1 || w > WIDTH_MAX) {
			fprintf(stderr, "sqlite_width_bench: width %d not in 1..%d\n", w, WIDTH_MAX);
			return 2;
		}
		r = rate(rows, w);
		if (r < 0)
			return 1;
		printf("%2d columns: %.0f rows/s\n", w, r);
	}
	return 0;
}
