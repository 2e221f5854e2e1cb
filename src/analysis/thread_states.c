/* Stored thread states read back for chains (thread_states.h). */
#include "analysis/thread_states.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

static const struct {
	const char *wait, *kind;
} kinds[] = {
	{"pipe", "pipe"},   {"socket", "socket"},   {"lock", "futex"},       {"disk io", "disk"},
	{"file io", "file"}, {"sleep", "sleep"},    {"poll", "poll"},        {"child", "child"},
	{"gpu driver", "gpu_driver"}, {"cuda call", "cuda_call"}, {"stopped", "stopped"}, {"exited", "exited"},
};

const char *cw_blocked_kind(const char *wait, int starved)
{
	if (!wait)
		return "other";
	if (!strcmp(wait, "runnable"))
		return starved ? "runnable_starved" : "running";
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(wait, kinds[i].wait))
			return kinds[i].kind;
	return "other";
}

static void str_of(const json_t *o, const char *key, char *buf, size_t len)
{
	const char *s = json_string_value(json_object_get(o, key));

	snprintf(buf, len, "%s", s ? s : "");
}

int cw_threads_from_detail(const json_t *detail, int64_t tid_first, struct cw_chain_thread *out, int max,
			   int *total)
{
	const json_t *arr = json_object_get(detail, "threads"), *t;
	size_t i;
	int n = 0;

	*total = json_is_array(arr) ? (int)json_array_size(arr) : 0;
	if (!json_is_array(arr))
		return 0;
	/* The thread asked for first, then the others in stored order. */
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(arr, i, t) {
			struct cw_chain_thread *c;
			json_int_t tid = json_integer_value(json_object_get(t, "tid"));
			char wait[32], st[4];

			if (!json_is_object(t) || tid <= 0 || (pass == 0) != (tid == tid_first) || n == max)
				continue;
			c = &out[n++];
			memset(c, 0, sizeof(*c));
			c->tid = tid;
			str_of(t, "comm", c->comm, sizeof(c->comm));
			str_of(t, "state", st, sizeof(st));
			c->state = st[0] >= 'A' && st[0] <= 'z' ? st[0] : 0;
			str_of(t, "wait", wait, sizeof(wait));
			snprintf(c->blocked_in, sizeof(c->blocked_in), "%s", cw_blocked_kind(wait, 0));
			str_of(t, "syscall_name", c->syscall, sizeof(c->syscall));
			str_of(t, "target", c->target, sizeof(c->target));
			str_of(t, "wchan", c->wchan, sizeof(c->wchan));
			str_of(t, "in_call", c->in_call, sizeof(c->in_call));
			str_of(t, "python", c->python, sizeof(c->python));
			if (json_integer_value(json_object_get(t, "in_call_ns")) > 0)
				c->in_call_ns = (uint64_t)json_integer_value(json_object_get(t, "in_call_ns"));
		}
	return n;
}

int cw_threads_mark_starved(sqlite3 *db, const char *node, uint64_t mono_ns, struct cw_chain_thread *out, int n)
{
	static const char sql[] = "SELECT start_mono_ns, end_mono_ns FROM offcpu WHERE tid = ?1 AND node = ?2"
				  " AND reason = 'preempted' AND start_mono_ns BETWEEN ?3 AND ?4";
	sqlite3_stmt *st = NULL;
	int rc = SQLITE_DONE;

	if (!mono_ns || mono_ns < NSEC_PER_SEC)
		return 0;
	for (int i = 0; i < n; i++) {
		uint64_t lo = mono_ns - NSEC_PER_SEC, pre = 0;

		if (strcmp(out[i].blocked_in, "running"))
			continue;
		if (!st && (rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK)
			return cw_sqlite_errno(rc);
		sqlite3_bind_int64(st, 1, out[i].tid);
		sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)(lo - 60 * NSEC_PER_SEC));
		sqlite3_bind_int64(st, 4, (int64_t)mono_ns);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			uint64_t s = (uint64_t)sqlite3_column_int64(st, 0), e = (uint64_t)sqlite3_column_int64(st, 1);

			if (s < lo)
				s = lo;
			if (e > mono_ns)
				e = mono_ns;
			if (e > s)
				pre += e - s;
		}
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			break;
		if ((double)pre >= CW_STARVED_SHARE * (double)NSEC_PER_SEC)
			snprintf(out[i].blocked_in, sizeof(out[i].blocked_in), "runnable_starved");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : cw_sqlite_errno(rc);
}

int cw_stored_threads(sqlite3 *db, const char *node, int64_t pid, int64_t min_id, int64_t tid_first,
		      struct cw_chain_thread *out, int max, int *total, char *from, size_t from_len)
{
	/* Backwards by rowid from the newest row: the snapshot is at the end
	 * of the data, so the scan stops early; min_id bounds it otherwise. */
	static const char sql[] = "SELECT detail, mono_ns, source FROM kevents WHERE id >= ?1 AND node = ?2 AND pid = ?3"
				  " AND ((source = 'threads' AND op = 'end_of_trace') OR (source = 'stall'"
				  " AND op = 'training_stall')) ORDER BY id DESC LIMIT 1";
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL), n = 0;

	*total = 0;
	if (from_len)
		from[0] = '\0';
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, min_id);
	sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, pid);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT) {
		json_t *d = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
		const char *src = (const char *)sqlite3_column_text(st, 2);
		uint64_t mono = (uint64_t)sqlite3_column_int64(st, 1);

		if (d) {
			n = cw_threads_from_detail(d, tid_first, out, max, total);
			json_decref(d);
			snprintf(from, from_len, "%s", src && !strcmp(src, "stall") ? "stall" : "end_of_trace");
		}
		sqlite3_finalize(st);
		if (n > 0 && (rc = cw_threads_mark_starved(db, node, mono, out, n)) < 0)
			return rc;
		return n;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

void cw_chain_thread_text(const struct cw_chain_thread *t, char *buf, size_t len)
{
	const char *k = t->blocked_in;
	char what[200];

	if (t->in_call[0])
		snprintf(what, sizeof(what), "inside %s for %.1fs, not returned (%s%s%s)", t->in_call,
			 (double)t->in_call_ns / 1e9, t->state == 'R' ? "spinning" : "sleeping",
			 t->syscall[0] ? " in " : "", t->syscall);
	else if (!strcmp(k, "pipe") || !strcmp(k, "socket"))
		snprintf(what, sizeof(what), "blocked in %s on a %s (%s)", t->syscall[0] ? t->syscall : "a read", k,
			 t->target);
	else if (!strcmp(k, "futex"))
		snprintf(what, sizeof(what), "blocked on a futex (a lock or condition)");
	else if (!strcmp(k, "disk"))
		snprintf(what, sizeof(what), "blocked on disk I/O%s%s", t->target[0] ? " to " : "", t->target);
	else if (!strcmp(k, "file"))
		snprintf(what, sizeof(what), "blocked on file I/O%s%s", t->target[0] ? " to " : "", t->target);
	else if (!strcmp(k, "sleep"))
		snprintf(what, sizeof(what), "sleeping (%s)", t->syscall);
	else if (!strcmp(k, "poll"))
		snprintf(what, sizeof(what), "waiting in %s", t->syscall);
	else if (!strcmp(k, "child"))
		snprintf(what, sizeof(what), "waiting for a child process");
	else if (!strcmp(k, "gpu_driver"))
		snprintf(what, sizeof(what), "inside the NVIDIA driver (%s on %s)", t->syscall, t->target);
	else if (!strcmp(k, "running"))
		snprintf(what, sizeof(what), "running (on a CPU)");
	else if (!strcmp(k, "runnable_starved"))
		snprintf(what, sizeof(what), "runnable but starved (preempted for most of its last second)");
	else
		snprintf(what, sizeof(what), "%s (state %c%s%s)", k, t->state ? t->state : '?',
			 t->syscall[0] ? " in " : "", t->syscall);
	snprintf(buf, len, "thread %lld (%s) %s%s%s%s%s", (long long)t->tid, t->comm, what, t->wchan[0] ? ", wchan " : "",
		 t->wchan, t->python[0] ? " at " : "", t->python);
}

static json_t *str_or_null(const char *s)
{
	return s[0] ? cw_json_str(s) : json_null();
}

json_t *cw_chain_thread_json(const struct cw_chain_thread *t)
{
	json_t *o = json_object();
	char st[2] = {t->state, 0};

	json_object_set_new(o, "tid", json_integer((json_int_t)t->tid));
	json_object_set_new(o, "comm", cw_json_str(t->comm));
	json_object_set_new(o, "state", str_or_null(st));
	json_object_set_new(o, "blocked_in", cw_json_str(t->blocked_in));
	json_object_set_new(o, "syscall", str_or_null(t->syscall));
	json_object_set_new(o, "target", str_or_null(t->target));
	json_object_set_new(o, "wchan", str_or_null(t->wchan));
	json_object_set_new(o, "in_call", str_or_null(t->in_call));
	json_object_set_new(o, "in_call_ns", t->in_call[0] ? json_integer((json_int_t)t->in_call_ns) : json_null());
	json_object_set_new(o, "python", str_or_null(t->python));
	return o;
}
