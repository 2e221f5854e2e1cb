/* Rows named by id: a call's thread, op, detail string and argument
 * tuple, and the stacks, each inserted once and cached. */
#include "store/writer_int.h"

#include <errno.h>
#include <string.h>

/* Runs an interning statement already bound: the row id it inserted,
 * or for a SELECT the id it found (0 none). */
static int64_t step_id(struct cw_writer *w, sqlite3_stmt *s, int insert)
{
	int rc = sqlite3_step(s);
	int64_t id = 0;

	if (rc == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cw_sqlite_db_errno(w->db, rc);
	return insert ? sqlite3_last_insert_rowid(w->db) : id;
}

/* The call_threads row of a call: per thread identity, session and 2^31 ns
 * of monotonic time (so a call's offset from its base fits 4 bytes). */
int64_t writer_thread_id(struct cw_writer *w, const struct cw_event_row *r)
{
	struct cw_tkey k = {
		.pid = r->pid,
		.tid = r->tid,
		.cgroup_id = r->cgroup_id,
		.device = r->device >= 0 ? r->device : -1,
		.mono_base = cw_tkey_base(r->mono_ns),
		.wall_off = (int64_t)(r->wall_ns - r->mono_ns),
		.comm = r->comm,
	};
	uint64_t h = cw_tkey_hash(&k);
	sqlite3_stmt *s = w->st[ST_TKEY_PUT];
	int64_t id;

	if (cw_keycache_get(&w->threads, &k, h, &id))
		return id;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	sqlite3_bind_int64(s, 3, k.pid);
	sqlite3_bind_int64(s, 4, k.tid);
	sqlite3_bind_int64(s, 5, (int64_t)k.cgroup_id);
	bind_text_or_null(s, 6, k.comm);
	if (k.device >= 0)
		sqlite3_bind_int(s, 7, k.device);
	sqlite3_bind_int64(s, 8, k.mono_base);
	sqlite3_bind_int64(s, 9, k.wall_off);
	id = step_id(w, s, 1);
	if (id > 0 && cw_keycache_put(&w->threads, &k, h, id))
		return -ENOMEM;
	return id;
}

int64_t writer_op_id(struct cw_writer *w, struct op_state *o)
{
	sqlite3_stmt *s;
	int64_t id;

	if (o->db_id)
		return o->db_id;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	s = w->st[ST_OP_PUT];
	sqlite3_bind_text(s, 1, o->source, o->source_len, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, o->op, o->op_len, SQLITE_STATIC);
	id = step_id(w, s, 1);
	if (id < 0)
		return id;
	s = w->st[ST_OP_GET];
	sqlite3_bind_text(s, 1, o->source, o->source_len, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, o->op, o->op_len, SQLITE_STATIC);
	id = step_id(w, s, 0);
	if (id > 0)
		o->db_id = id;
	return id ? id : -EIO;
}

/* The strings row of a detail text (kernel names repeat for every launch). */
int64_t writer_string_id(struct cw_writer *w, const char *text)
{
	size_t len = strlen(text);
	uint64_t h = cw_str_hash(text, len);
	sqlite3_stmt *s;
	int64_t id;

	if (len > (1u << 30))
		return -E2BIG;
	if (cw_strcache_get(&w->strings, text, len, h, &id))
		return id;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	s = w->st[ST_STR_GET];
	sqlite3_bind_text(s, 1, text, (int)len, SQLITE_STATIC);
	id = step_id(w, s, 0);
	if (!id) {
		s = w->st[ST_STR_PUT];
		sqlite3_bind_text(s, 1, text, (int)len, SQLITE_STATIC);
		id = step_id(w, s, 1);
	}
	/* A full cache only costs a lookup next time. */
	if (id > 0 && cw_strcache_put(&w->strings, text, len, h, id))
		return -ENOMEM;
	return id;
}

/* A call's argument tuple: interned on its second sighting (kernels are
 * launched again and again with the same grid), inline before and when
 * the tuple is one of a kind (a fresh pointer). Returns call_args.id, 0
 * for inline, or -errno. */
int64_t writer_args_id(struct cw_writer *w, const struct cw_event_row *r)
{
	struct cw_argkey k = { .nargs = r->nargs > 4 ? 4 : r->nargs };
	sqlite3_stmt *s = w->st[ST_ARGS_PUT];
	uint64_t h;
	int64_t id;
	int i, got;

	if (k.nargs <= 0)
		return 0;
	for (i = 0; i < k.nargs; i++)
		k.a[i] = r->args[i];
	h = cw_argkey_hash(&k);
	got = cw_argcache_get(&w->args, &k, h, &id);
	if (got && id > 0)
		return id;
	if (!got)
		return cw_argcache_put(&w->args, &k, h, 0) ? -ENOMEM : 0;
	WLOCK(w);
	if ((id = writer_begin(w)))
		return id;
	for (i = 0; i < k.nargs; i++)
		sqlite3_bind_int64(s, 1 + i, k.a[i]);
	id = step_id(w, s, 1);
	if (id > 0 && cw_argcache_put(&w->args, &k, h, id))
		return -ENOMEM;
	return id;
}

/* Stack hashes are stored as signed 64-bit integers; a zero hash would be
 * the empty-slot key of the cache, so it is nudged. */
static uint64_t cache_key(uint64_t hash)
{
	return hash ? hash : 1;
}

static int64_t intern(struct cw_writer *w, struct u64map *cache, enum stmt_id get, enum stmt_id put,
		      uint64_t hash, int depth, const char *frames, const char *uf, int ul, const char *ufn)
{
	sqlite3_stmt *s;
	int64_t id;
	int err, rc;

	if (u64map_get(cache, cache_key(hash), &id))
		return id;
	err = writer_begin(w);
	if (err)
		return err;
	s = w->st[get];
	sqlite3_bind_int64(s, 1, (int64_t)hash);
	rc = sqlite3_step(s);
	id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_reset(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		err = cw_sqlite_db_errno(w->db, rc);
		writer_note_error(w, err);
		return err;
	}
	if (!id) {
		s = w->st[put];
		sqlite3_bind_int64(s, 1, (int64_t)hash);
		sqlite3_bind_int(s, 2, depth);
		bind_text_or_null(s, 3, frames);
		if (put == ST_PYSTACK_PUT) {
			bind_text_or_null(s, 4, uf);
			if (ul > 0)
				sqlite3_bind_int(s, 5, ul);
			bind_text_or_null(s, 6, ufn);
		}
		err = step_reset(s);
		if (err) {
			writer_note_error(w, err);
			return err;
		}
		id = sqlite3_last_insert_rowid(w->db);
	}
	/* A full cache only costs a lookup next time. */
	u64map_put(cache, cache_key(hash), id);
	return id;
}

int64_t cw_writer_intern_stack(struct cw_writer *w, uint64_t hash, int depth, const char *frames)
{
	writer_sync_gen(w);
	WLOCK(w);
	return intern(w, &w->stack_ids, ST_STACK_GET, ST_STACK_PUT, hash, depth, frames, NULL, 0, NULL);
}

int64_t cw_writer_intern_pystack(struct cw_writer *w, uint64_t hash, int depth, const char *frames_json,
				 const char *user_file, int user_line, const char *user_function)
{
	writer_sync_gen(w);
	WLOCK(w);
	return intern(w, &w->pystack_ids, ST_PYSTACK_GET, ST_PYSTACK_PUT, hash, depth, frames_json, user_file,
		      user_line, user_function);
}

int cw_writer_pystack_cached(struct cw_writer *w, uint64_t hash, int64_t *id)
{
	writer_sync_gen(w);
	return u64map_get(&w->pystack_ids, cache_key(hash), id);
}
