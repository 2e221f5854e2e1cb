/* Fetched events straight into calls and kevents (fetch_events.h). What
 * it writes is what the events view's INSERT trigger (store/migrate.c)
 * writes for the same row: the same thread, op and string rows, ids that
 * continue the larger of both tables, seq kept only where it differs from
 * the id. Interned ids are cached here; a cache miss asks the table. */
#include "fleet/fetch_events.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/migrate.h"
#include "store/store.h"

/* A direct-mapped cache of interned rows: key bytes -> id. A collision
 * replaces the slot; the table still has the row. */
struct slot {
	char *key;
	size_t len;
	int64_t id;
};

struct cache {
	struct slot *v;
	size_t n; /* a power of two */
};

enum { ST_KEV, ST_CALL, ST_TH_GET, ST_TH_PUT, ST_OP_PUT, ST_OP_GET, ST_STR_PUT, ST_STR_GET, ST_PY_PUT, ST_PY_GET, ST_N };

static const char *const sqls[ST_N] = {
	[ST_KEV] = "INSERT INTO kevents (id, node, seq, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op,"
		   " duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, py_stack_id, anomalous)"
		   " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)",
	[ST_CALL] = "INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, pystack, anomalous, sq)"
		    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)",
	[ST_TH_GET] = "SELECT max(id) FROM call_threads WHERE tid = ?1 AND mono_base = ?2 AND pid = ?3 AND node = ?4"
		      " AND session_id IS NULL AND cgroup_id IS ?5 AND comm IS ?6 AND device IS ?7 AND wall_off = ?8",
	[ST_TH_PUT] = "INSERT INTO call_threads (node, pid, tid, cgroup_id, comm, device, mono_base, wall_off)"
		      " VALUES (?4,?3,?1,?5,?6,?7,?2,?8)",
	[ST_OP_PUT] = "INSERT OR IGNORE INTO call_ops (source, op) VALUES (?1, ?2)",
	[ST_OP_GET] = "SELECT id FROM call_ops WHERE source = ?1 AND op = ?2",
	[ST_STR_PUT] = "INSERT OR IGNORE INTO strings (text) VALUES (?1)",
	[ST_STR_GET] = "SELECT id FROM strings WHERE text = ?1",
	[ST_PY_PUT] = "INSERT OR IGNORE INTO py_stacks (hash, depth, frames, user_file, user_line, user_function,"
		      " python_via) VALUES (?1,?2,?3,?4,?5,?6," CW_PYVIA_FROM_FRAMES("?3") ")",
	[ST_PY_GET] = "SELECT id FROM py_stacks WHERE hash = ?1",
};

struct cw_evsink {
	sqlite3 *db;
	sqlite3_stmt *st[ST_N];
	struct cache threads, ops, strs, pys;
	int64_t next_id;
	char *kb; /* key scratch */
	size_t kcap;
};

/* The row's columns (fetch_events.h). */
enum {
	C_NODE, C_SEQ, C_WALL, C_MONO, C_PID, C_TID, C_CGROUP, C_COMM, C_SOURCE, C_OP, C_DUR, C_ARG0, C_ARG1, C_ARG2,
	C_ARG3, C_BYTES, C_DETAIL, C_RET, C_DEVICE, C_ANOM, C_PY
};

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static int cache_init(struct cache *c, size_t n)
{
	c->n = n;
	return (c->v = calloc(n, sizeof(*c->v))) ? 0 : -ENOMEM;
}

static void cache_clear(struct cache *c)
{
	for (size_t i = 0; c->v && i < c->n; i++) {
		free(c->v[i].key);
		c->v[i] = (struct slot){ 0 };
	}
}

static struct slot *cache_slot(struct cache *c, const char *k, size_t n)
{
	return &c->v[fnv(k, n) & (c->n - 1)];
}

static int cache_get(struct cache *c, const char *k, size_t n, int64_t *id)
{
	struct slot *s = cache_slot(c, k, n);

	if (!s->key || s->len != n || memcmp(s->key, k, n))
		return 0;
	*id = s->id;
	return 1;
}

static void cache_put(struct cache *c, const char *k, size_t n, int64_t id)
{
	struct slot *s = cache_slot(c, k, n);
	char *dup = malloc(n ? n : 1);

	if (!dup)
		return; /* uncached: the next miss asks the table */
	memcpy(dup, k, n);
	free(s->key);
	*s = (struct slot){ dup, n, id };
}

/* Key scratch: fields appended with their lengths, so no two keys of
 * different fields read alike. */
static int key_add(struct cw_evsink *s, size_t *at, const void *p, size_t n)
{
	if (*at + n + sizeof(n) > s->kcap) {
		size_t cap = (*at + n + sizeof(n)) * 2;
		char *nb = realloc(s->kb, cap);
		if (!nb)
			return -ENOMEM;
		s->kb = nb;
		s->kcap = cap;
	}
	memcpy(s->kb + *at, &n, sizeof(n));
	memcpy(s->kb + *at + sizeof(n), p, n);
	*at += sizeof(n) + n;
	return 0;
}

/* A JSON value as the key part: type tag and value. */
static int key_json(struct cw_evsink *s, size_t *at, json_t *v)
{
	if (json_is_string(v)) {
		size_t n = json_string_length(v);
		int r = key_add(s, at, "s", 1);
		return r ? r : key_add(s, at, json_string_value(v), n);
	}
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		int r = key_add(s, at, "i", 1);
		return r ? r : key_add(s, at, &i, sizeof(i));
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		int r = key_add(s, at, "r", 1);
		return r ? r : key_add(s, at, &d, sizeof(d));
	}
	if (json_is_boolean(v)) {
		int r = key_add(s, at, "b", 1);
		return r ? r : key_add(s, at, json_is_true(v) ? "1" : "0", 1);
	}
	return key_add(s, at, "n", 1);
}

/* Binds an agent's JSON value as the view's trigger would receive it. */
static int bind(sqlite3_stmt *st, int i, json_t *v)
{
	if (json_is_integer(v))
		return sqlite3_bind_int64(st, i, json_integer_value(v));
	if (json_is_real(v))
		return sqlite3_bind_double(st, i, json_real_value(v));
	if (json_is_boolean(v))
		return sqlite3_bind_int(st, i, json_is_true(v));
	if (json_is_string(v))
		return sqlite3_bind_text(st, i, json_string_value(v), (int)json_string_length(v), SQLITE_STATIC);
	return sqlite3_bind_null(st, i);
}

/* coalesce(v, 0) */
static int bind_or0(sqlite3_stmt *st, int i, json_t *v)
{
	return json_is_null(v) || !v ? sqlite3_bind_int64(st, i, 0) : bind(st, i, v);
}

/* Steps a statement to its end; a row's first column into *id. */
static int run(sqlite3_stmt *st, int64_t *id)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (id)
			*id = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_evsink_reset(struct cw_evsink *s)
{
	sqlite3_stmt *st;
	int rc;

	cache_clear(&s->threads);
	cache_clear(&s->ops);
	cache_clear(&s->strs);
	cache_clear(&s->pys);
	if (sqlite3_prepare_v2(s->db,
			       "SELECT max(coalesce((SELECT max(id) FROM calls), 0),"
			       " coalesce((SELECT max(id) FROM kevents), 0)) + 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	s->next_id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

int cw_evsink_new(struct cw_evsink **out, sqlite3 *db)
{
	struct cw_evsink *s = calloc(1, sizeof(*s));
	int ret = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->db = db;
	for (int i = 0; i < ST_N && !ret; i++)
		if (sqlite3_prepare_v3(db, sqls[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) != SQLITE_OK)
			ret = -EIO;
	if (!ret)
		ret = cache_init(&s->threads, 1024) ?: cache_init(&s->ops, 256) ?: cache_init(&s->strs, 4096)
			?: cache_init(&s->pys, 4096);
	if (!ret)
		ret = cw_evsink_reset(s);
	if (ret) {
		cw_evsink_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void cw_evsink_free(struct cw_evsink *s)
{
	if (!s)
		return;
	for (int i = 0; i < ST_N; i++)
		sqlite3_finalize(s->st[i]);
	cache_clear(&s->threads);
	cache_clear(&s->ops);
	cache_clear(&s->strs);
	cache_clear(&s->pys);
	free(s->threads.v);
	free(s->ops.v);
	free(s->strs.v);
	free(s->pys.v);
	free(s->kb);
	free(s);
}

/* The local py_stacks id of the row's stack (interned by hash), 0 none. */
static int py_id(struct cw_evsink *s, json_t *row, int64_t *id)
{
	json_t *hash = json_array_get(row, C_PY);
	json_int_t h;
	int ret;

	*id = 0;
	if (!json_is_integer(hash))
		return 0;
	h = json_integer_value(hash);
	if (cache_get(&s->pys, (const char *)&h, sizeof(h), id))
		return 0;
	for (int k = 0; k < 6; k++)
		bind(s->st[ST_PY_PUT], k + 1, json_array_get(row, C_PY + (size_t)k));
	if ((ret = run(s->st[ST_PY_PUT], NULL)))
		return ret;
	sqlite3_bind_int64(s->st[ST_PY_GET], 1, h);
	if ((ret = run(s->st[ST_PY_GET], id)))
		return ret;
	if (*id)
		cache_put(&s->pys, (const char *)&h, sizeof(h), *id);
	return 0;
}

/* INSERT OR IGNORE then SELECT: the id of an interned row (0: refused). */
static int intern(struct cw_evsink *s, struct cache *c, int put, int get, json_t *a, json_t *b, int64_t *id)
{
	size_t at = 0;
	int ret;

	*id = 0;
	if ((ret = key_json(s, &at, a)) || (b && (ret = key_json(s, &at, b))))
		return ret;
	if (cache_get(c, s->kb, at, id))
		return 0;
	bind(s->st[put], 1, a);
	bind(s->st[get], 1, a);
	if (b) {
		bind(s->st[put], 2, b);
		bind(s->st[get], 2, b);
	}
	if ((ret = run(s->st[put], NULL)) || (ret = run(s->st[get], id)))
		return ret;
	if (*id)
		cache_put(c, s->kb, at, *id);
	return 0;
}

/* The call_threads row of a call (one per thread identity and 2^31 ns of
 * monotonic time), created on first use. */
static int thread_id(struct cw_evsink *s, json_t *row, int64_t base, int64_t off, int64_t *id)
{
	static const int cols[] = { C_NODE, C_PID, C_TID, C_CGROUP, C_COMM, C_DEVICE };
	sqlite3_stmt *get = s->st[ST_TH_GET], *put = s->st[ST_TH_PUT];
	size_t at = 0;
	int ret = 0;

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]) && !ret; i++)
		ret = key_json(s, &at, json_array_get(row, (size_t)cols[i]));
	if (ret || (ret = key_add(s, &at, &base, sizeof(base))) || (ret = key_add(s, &at, &off, sizeof(off))))
		return ret;
	if (cache_get(&s->threads, s->kb, at, id))
		return 0;
	for (int k = 0; k < 2; k++) {
		sqlite3_stmt *st = k ? put : get;
		bind(st, 1, json_array_get(row, C_TID));
		sqlite3_bind_int64(st, 2, base);
		bind(st, 3, json_array_get(row, C_PID));
		bind(st, 4, json_array_get(row, C_NODE));
		bind(st, 5, json_array_get(row, C_CGROUP));
		bind(st, 6, json_array_get(row, C_COMM));
		bind(st, 7, json_array_get(row, C_DEVICE));
		sqlite3_bind_int64(st, 8, off);
		if (!k) {
			if ((ret = run(get, id)) || *id)
				break;
		} else if (!(ret = run(put, NULL))) {
			*id = sqlite3_last_insert_rowid(s->db);
		}
	}
	if (!ret && *id)
		cache_put(&s->threads, s->kb, at, *id);
	return ret;
}

static int is_call(json_t *source)
{
	const char *v = json_string_value(source);

	return v && (!strcmp(v, "cuda") || !strcmp(v, "driver") || !strcmp(v, "graph") || !strcmp(v, "nccl"));
}

static int put_call(struct cw_evsink *s, json_t *row, int64_t id, int64_t *stored)
{
	json_t *seq = json_array_get(row, C_SEQ), *detail = json_array_get(row, C_DETAIL);
	int64_t mono = json_integer_value(json_array_get(row, C_MONO)), wall = json_integer_value(json_array_get(row, C_WALL));
	int64_t base = (int64_t)((uint64_t)(mono >> 31) << 31), off, th, op, str = 0, py;
	sqlite3_stmt *st = s->st[ST_CALL];
	int ret;

	*stored = 0;
	if (__builtin_sub_overflow(wall, mono, &off))
		return 0; /* no thread row can hold it: refused as the view would */
	if ((ret = thread_id(s, row, base, off, &th)) || !th)
		return ret;
	if ((ret = intern(s, &s->ops, ST_OP_PUT, ST_OP_GET, json_array_get(row, C_SOURCE), json_array_get(row, C_OP), &op)) ||
	    !op)
		return ret;
	if (!json_is_null(detail) && detail &&
	    (ret = intern(s, &s->strs, ST_STR_PUT, ST_STR_GET, detail, NULL, &str)))
		return ret;
	if ((ret = py_id(s, row, &py)))
		return ret;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, th);
	sqlite3_bind_int64(st, 3, op);
	sqlite3_bind_int64(st, 4, mono - base);
	bind_or0(st, 5, json_array_get(row, C_DUR));
	for (int k = 0; k < 4; k++)
		bind(st, 6 + k, json_array_get(row, C_ARG0 + (size_t)k));
	bind(st, 10, json_array_get(row, C_BYTES));
	if (str)
		sqlite3_bind_int64(st, 11, str);
	bind(st, 12, json_array_get(row, C_RET));
	if (py)
		sqlite3_bind_int64(st, 13, py);
	bind_or0(st, 14, json_array_get(row, C_ANOM));
	if (!(json_is_integer(seq) && json_integer_value(seq) == id))
		bind(st, 15, seq);
	ret = run(st, NULL);
	*stored = !ret;
	return ret == -EEXIST ? 0 : ret; /* a constraint refuses the row alone */
}

static int put_kevent(struct cw_evsink *s, json_t *row, int64_t id, int64_t *stored)
{
	sqlite3_stmt *st = s->st[ST_KEV];
	int64_t py;
	int ret;

	*stored = 0;
	if ((ret = py_id(s, row, &py)))
		return ret;
	sqlite3_bind_int64(st, 1, id);
	for (int k = C_NODE; k <= C_DEVICE; k++)
		(k == C_DUR ? bind_or0 : bind)(st, 2 + k, json_array_get(row, (size_t)k));
	if (py)
		sqlite3_bind_int64(st, 21, py);
	bind_or0(st, 22, json_array_get(row, C_ANOM));
	ret = run(st, NULL);
	*stored = !ret;
	return ret == -EEXIST ? 0 : ret;
}

int cw_evsink_put(struct cw_evsink *s, json_t *row)
{
	static const int need_int[] = { C_WALL, C_MONO, C_PID, C_TID };
	static const int need_str[] = { C_NODE, C_SOURCE, C_OP };
	int64_t stored = 0;
	int ret;

	if (json_array_size(row) != CW_EVSINK_COLS)
		return -EPROTO;
	for (size_t i = 0; i < sizeof(need_int) / sizeof(need_int[0]); i++)
		if (!json_is_integer(json_array_get(row, (size_t)need_int[i])))
			return 1;
	for (size_t i = 0; i < sizeof(need_str) / sizeof(need_str[0]); i++)
		if (!json_is_string(json_array_get(row, (size_t)need_str[i])))
			return 1;
	if (is_call(json_array_get(row, C_SOURCE)))
		ret = put_call(s, row, s->next_id, &stored);
	else if (json_is_null(json_array_get(row, C_SEQ)))
		return 1;
	else
		ret = put_kevent(s, row, s->next_id, &stored);
	if (ret)
		return ret;
	if (!stored)
		return 1;
	s->next_id++;
	return 0;
}
