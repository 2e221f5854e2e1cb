/* A memory bound per user statement (ro_guard.h).
 *
 * sqlite3_hard_heap_limit64() is process-wide and needs SQLite's memory
 * statistics, which store.c turns off for the writer's sake; a statement
 * from one API client must not fail another's, nor trace's writer. So
 * SQLite's allocator is wrapped: the thread that runs a user statement
 * (one per statement: the command, an API connection, an MCP request)
 * counts what SQLite allocates and frees on it from cw_ro_heap_begin() to
 * cw_ro_heap_end(), and an allocation that would take the count past the
 * limit fails, which SQLite turns into SQLITE_NOMEM for that statement
 * only. Every other thread pays one thread-local load per call. Memory a
 * statement frees that was allocated before it started (page cache) only
 * loosens the count, by at most the connection's cache. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "store/ro_guard.h"

static sqlite3_mem_methods sys;
static int installed;

static _Thread_local struct {
	int64_t limit; /* 0: not counting */
	int64_t used;
	int refused;
} heap;

static int charge(int64_t n)
{
	if (heap.used + n > heap.limit) {
		heap.refused = 1;
		return -1;
	}
	return 0;
}

static void *h_malloc(int n)
{
	void *p;

	if (heap.limit && charge(n))
		return NULL;
	p = sys.xMalloc(n);
	if (p && heap.limit)
		heap.used += sys.xSize(p);
	return p;
}

static void h_free(void *p)
{
	if (p && heap.limit)
		heap.used -= sys.xSize(p);
	sys.xFree(p);
}

static void *h_realloc(void *p, int n)
{
	int64_t old;
	void *q;

	if (!heap.limit)
		return sys.xRealloc(p, n);
	old = p ? sys.xSize(p) : 0;
	if (n > old && charge(n - old))
		return NULL;
	q = sys.xRealloc(p, n);
	if (q)
		heap.used += sys.xSize(q) - old;
	return q;
}

static int h_size(void *p)
{
	return sys.xSize(p);
}

static int h_roundup(int n)
{
	return sys.xRoundup(n);
}

static int h_init(void *app)
{
	return sys.xInit(app);
}

static void h_shutdown(void *app)
{
	sys.xShutdown(app);
}

void cw_ro_heap_install(void)
{
	static const sqlite3_mem_methods wrap = {
		h_malloc, h_free, h_realloc, h_size, h_roundup, h_init, h_shutdown, NULL,
	};
	sqlite3_mem_methods m = wrap;

	if (installed || sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sys) != SQLITE_OK)
		return;
	m.pAppData = sys.pAppData;
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) == SQLITE_OK)
		installed = 1;
}

void cw_ro_heap_begin(int64_t limit)
{
	heap.used = 0;
	heap.refused = 0;
	heap.limit = installed ? limit : 0;
}

int cw_ro_heap_end(void)
{
	heap.limit = 0;
	return heap.refused;
}

int cw_ro_heap_refused(void)
{
	return heap.refused;
}

int cw_ro_heap_charge(int64_t n)
{
	if (!heap.limit)
		return 0;
	if (n > 0 && charge(n))
		return -ENOMEM;
	heap.used += n;
	return 0;
}
