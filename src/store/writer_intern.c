/* Stacks and Python stacks: each inserted once (by hash) and cached. */
#include "store/writer_core.h"

#include "store/sqlite_util.h"

/* Stack hashes are stored as signed 64-bit integers; a zero hash would be
 * the empty-slot key of the cache, so it is nudged. */
static uint64_t cache_key(uint64_t hash)
{
	return hash ? hash : 1;
}

static int64_t intern(struct cw_writer *w, struct u64map *cache, enum stmt_id get, enum stmt_id put,
		      uint64_t hash, int depth, const char *frames, const char *uf, int ul, const char *ufn, int64_t via)
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
			if (via > 0)
				sqlite3_bind_int64(s, 7, via);
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
	return intern(w, &w->stack_ids, ST_STACK_GET, ST_STACK_PUT, hash, depth, frames, NULL, 0, NULL, 0);
}

int64_t cw_writer_intern_pystack(struct cw_writer *w, uint64_t hash, int depth, const char *frames_json,
				 const char *user_file, int user_line, const char *user_function, int64_t python_via)
{
	writer_sync_gen(w);
	WLOCK(w);
	return intern(w, &w->pystack_ids, ST_PYSTACK_GET, ST_PYSTACK_PUT, hash, depth, frames_json, user_file,
		      user_line, user_function, python_via);
}

int cw_writer_pystack_cached(struct cw_writer *w, uint64_t hash, int64_t *id)
{
	writer_sync_gen(w);
	return u64map_get(&w->pystack_ids, cache_key(hash), id);
}
