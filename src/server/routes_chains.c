/* /api/v1/chains, with its answers cached (docs/api.md).
 *
 * The explain engine over a 10-million-call file takes one to two seconds
 * of CPU, and the dashboard asks for the same chains on every load, on
 * every poll and again for a chain's timeline (timeline?chain=). So the
 * answer is kept, keyed by the request (window, pid, node) and by the
 * file's version: the newest and oldest rowids of the tables the engine
 * reads and the sessions' ends, so any new row, pruned row or ended
 * session makes the next request run explain again. A request that finds
 * the same answer being computed waits for it instead of running a second
 * engine on the same cores. The answer for the default window is computed
 * once when the server starts, in the background, so a page opened on a
 * large file does not wait for it. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/explain.h"
#include "analysis/explain_match.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define CACHE_ENTRIES 8
/* The key request() builds for no parameters at all. */
#define CW_CHAINS_DEFAULT_KEY "0/0/0//0/"

enum { ENTRY_EMPTY, ENTRY_COMPUTING, ENTRY_READY };

struct cache_entry {
	int state;
	char key[160], version[160];
	char *body; /* the whole answer, JSON text */
	int status;
	uint64_t used_ns;
};

struct cw_chains_cache {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cache_entry e[CACHE_ENTRIES];
	pthread_t warm;
	int warm_started;
	sqlite3 *warm_db; /* interrupted when the server stops */
};

/* The file's version as the engine sees it. */
static int data_version(sqlite3 *db, char *out, size_t len)
{
	static const char sql[] =
		"SELECT (SELECT max(id) FROM offcpu), (SELECT max(id) FROM snapshots), (SELECT count(*) FROM sessions),"
		" (SELECT max(coalesce(ended_wall_ns, 0)) FROM sessions), (SELECT max(second) FROM aggregates)";
	sqlite3_stmt *st;
	int64_t lo, hi;
	int rc;

	if ((rc = cw_events_id_bounds(db, &lo, &hi)))
		return rc;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		snprintf(out, len, "%lld/%lld/%lld/%lld/%lld/%lld/%lld", (long long)hi, (long long)lo,
			 (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
			 (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3),
			 (long long)sqlite3_column_int64(st, 4));
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : cw_sqlite_errno(rc);
}

/* Runs explain; fills *body (malloc'd JSON) and *status. */
static void compute(struct cw_server *s, sqlite3 *db, uint64_t deadline, const struct cw_explain_opts *o,
		    char **body, int *status)
{
	struct cw_explain_result res;
	struct cw_reply r = { 0 };
	json_t *j;
	int rc;

	char why[256];

	rc = cw_explain_run(db, o, &res);
	if (rc) {
		cw_api_fail(s, deadline, rc, "explain", &r);
	} else if ((rc = cw_explain_unmatched(db, o, &res, why, sizeof(why))) != 0) {
		/* Not an empty list of chains: there was nothing to look at. */
		if (rc < 0)
			cw_api_fail(s, deadline, rc, "explain", &r);
		else
			cw_reply_error(&r, 404, "nothing matches: %s", why);
		cw_explain_result_free(&res);
	} else {
		j = cw_explain_to_json(&res);
		if (j) {
			cw_chains_add_windows(&res, j);
			json_object_set_new(j, "node", cw_json_str(s->node));
		}
		cw_explain_result_free(&res);
		cw_reply_json(&r, 200, j);
	}
	*body = r.body;
	*status = r.status;
}

static uint64_t now_ns(void)
{
	return cw_monotonic_ns();
}

/* The answer for (key, version): from the cache, from another request
 * computing it, or computed here. *body is a malloc'd copy. */
static void get_answer(struct cw_server *s, sqlite3 *db, uint64_t deadline, const struct cw_explain_opts *o,
		       const char *key, const char *version, char **body, int *status)
{
	struct cw_chains_cache *cc = s->chains;
	struct cache_entry *e = NULL;
	char *b = NULL;
	int st = 500, i;

	if (!cc || !key[0]) {
		compute(s, db, deadline, o, body, status);
		return;
	}
	pthread_mutex_lock(&cc->lock);
	for (;;) {
		e = NULL;
		for (i = 0; i < CACHE_ENTRIES; i++)
			if (cc->e[i].state != ENTRY_EMPTY && !strcmp(cc->e[i].key, key) &&
			    !strcmp(cc->e[i].version, version))
				e = &cc->e[i];
		if (!e || e->state == ENTRY_READY)
			break;
		/* Being computed: wait, within this request's deadline. */
		{
			struct timespec ts;
			uint64_t left = deadline > now_ns() ? deadline - now_ns() : 0;

			if (!left)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)(left / NSEC_PER_SEC);
			ts.tv_nsec += (long)(left % NSEC_PER_SEC);
			if (ts.tv_nsec >= (long)NSEC_PER_SEC) {
				ts.tv_sec++;
				ts.tv_nsec -= (long)NSEC_PER_SEC;
			}
			pthread_cond_timedwait(&cc->cond, &cc->lock, &ts);
		}
	}
	if (e && e->state == ENTRY_READY) {
		e->used_ns = now_ns();
		*body = strdup(e->body);
		*status = e->body && *body ? e->status : 500;
		pthread_mutex_unlock(&cc->lock);
		return;
	}
	/* Claim the least recently used slot (never one being computed). */
	for (i = 0, e = NULL; i < CACHE_ENTRIES; i++) {
		struct cache_entry *x = &cc->e[i];

		if (x->state == ENTRY_COMPUTING)
			continue;
		if (!e || x->state == ENTRY_EMPTY || (e->state != ENTRY_EMPTY && x->used_ns < e->used_ns))
			e = x;
		if (x->state == ENTRY_EMPTY)
			break;
	}
	if (e) {
		free(e->body);
		e->body = NULL;
		e->state = ENTRY_COMPUTING;
		snprintf(e->key, sizeof(e->key), "%s", key);
		snprintf(e->version, sizeof(e->version), "%s", version);
	}
	pthread_mutex_unlock(&cc->lock);
	compute(s, db, deadline, o, &b, &st);
	pthread_mutex_lock(&cc->lock);
	if (e) {
		/* Only complete answers are kept: a time-out is not the answer. */
		e->state = st == 200 && b ? ENTRY_READY : ENTRY_EMPTY;
		e->body = e->state == ENTRY_READY ? strdup(b) : NULL;
		e->status = st;
		e->used_ns = now_ns();
		if (e->state == ENTRY_READY && !e->body)
			e->state = ENTRY_EMPTY;
		pthread_cond_broadcast(&cc->cond);
	}
	pthread_mutex_unlock(&cc->lock);
	*body = b;
	*status = st;
}

/* Parses pid/node/window/tenant filters of the request into o (o->pids
 * malloc'd: free it) and the cache key. */
static int request(struct MHD_Connection *c, sqlite3 *db, struct cw_explain_opts *o, char *key, size_t keylen,
		   struct cw_reply *r)
{
	const char *pid = cw_api_arg(c, "pid");
	struct cw_api_tenant_args ta;
	char tkey[96];
	int64_t *pids = NULL;
	int rc;

	memset(o, 0, sizeof(*o));
	if (cw_api_tenant_args(c, &ta, r))
		return -EINVAL;
	o->per_tenant = cw_api_flag(c, "per_tenant");
	if (cw_api_window(db, c, &o->from_wall_ns, &o->to_wall_ns, r))
		return -EINVAL;
	o->node_filter = cw_api_arg(c, "node");
	if (o->node_filter && strlen(o->node_filter) > 64) {
		cw_reply_error(r, 400, "invalid node \"%.64s...\"", o->node_filter);
		return -EINVAL;
	}
	if (pid) {
		char *end;

		o->pid = strtoll(pid, &end, 10);
		if (*end || o->pid <= 0) {
			cw_reply_error(r, 400, "invalid pid \"%s\"", pid);
			return -EINVAL;
		}
	}
	if ((rc = cw_api_tenant_pids(db, &ta, &pids, &o->npids))) {
		cw_reply_error(r, 500, "tenant filter failed: %s", strerror(-rc));
		return rc;
	}
	o->pids = pids;
	cw_api_tenant_key(&ta, tkey, sizeof(tkey));
	/* A key cut short could mix two filters' answers: such requests are
	 * not cached (an empty key). */
	if ((size_t)snprintf(key, keylen, "%llu/%llu/%lld/%s/%d/%s", (unsigned long long)o->from_wall_ns,
			     (unsigned long long)o->to_wall_ns, (long long)o->pid,
			     o->node_filter ? o->node_filter : "", o->per_tenant, tkey) >= keylen ||
	    strlen(tkey) >= sizeof(tkey) - 1)
		key[0] = '\0';
	return 0;
}

/* The cached (or computed) answer for this request's window, pid and
 * node. Returns 0 with *body (NULL: out of memory) and *status, or -errno
 * with r filled. */
static int request_answer(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, uint64_t deadline,
			  char **body, int *status, struct cw_reply *r)
{
	struct cw_explain_opts o;
	char key[160], version[160];
	int rc;

	*body = NULL;
	if (request(c, db, &o, key, sizeof(key), r))
		return -EINVAL;
	if ((rc = data_version(db, version, sizeof(version)))) {
		free((void *)o.pids);
		cw_api_fail(s, deadline, rc, "explain", r);
		return rc;
	}
	get_answer(s, db, deadline, &o, key, version, body, status);
	free((void *)o.pids);
	return 0;
}

int cw_chains_answer(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, uint64_t deadline, json_t **out,
		     struct cw_reply *r)
{
	char *body;
	int status, rc;

	*out = NULL;
	if ((rc = request_answer(s, c, db, deadline, &body, &status, r)))
		return rc;
	if (status != 200 || !body) {
		r->status = status;
		r->body = body;
		r->len = body ? strlen(body) : 0;
		r->ctype = "application/json";
		if (!body)
			cw_reply_error(r, 500, "out of memory");
		return -EIO;
	}
	*out = json_loads(body, 0, NULL);
	free(body);
	if (!*out) {
		cw_reply_error(r, 500, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void cw_route_chains(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	uint64_t deadline;
	char *body;
	sqlite3 *db;
	int status;

	if (cw_api_open(s, &db, &deadline, r))
		return;
	if (request_answer(s, c, db, deadline, &body, &status, r))
		goto out;
	if (!body) {
		cw_reply_error(r, 500, "out of memory");
		goto out;
	}
	r->status = status;
	r->body = body;
	r->len = strlen(body);
	r->ctype = "application/json";
out:
	cw_server_close_db(db);
}

static void *warm_main(void *arg)
{
	struct cw_server *s = arg;
	struct cw_explain_opts o = { 0 };
	char version[160], *body = NULL;
	uint64_t deadline;
	sqlite3 *db;
	int status;
	char err[256];

	if (cw_server_open_db(s, &db, &deadline, err, sizeof(err)))
		return NULL;
	pthread_mutex_lock(&s->chains->lock);
	s->chains->warm_db = db;
	pthread_mutex_unlock(&s->chains->lock);
	if (!data_version(db, version, sizeof(version)))
		get_answer(s, db, deadline, &o, CW_CHAINS_DEFAULT_KEY, version, &body, &status);
	free(body);
	pthread_mutex_lock(&s->chains->lock);
	s->chains->warm_db = NULL;
	pthread_mutex_unlock(&s->chains->lock);
	cw_server_close_db(db);
	return NULL;
}

int cw_chains_cache_start(struct cw_server *s, int warm)
{
	struct cw_chains_cache *cc = calloc(1, sizeof(*cc));

	if (!cc)
		return -ENOMEM;
	pthread_mutex_init(&cc->lock, NULL);
	pthread_cond_init(&cc->cond, NULL);
	s->chains = cc;
	if (warm && !pthread_create(&cc->warm, NULL, warm_main, s))
		cc->warm_started = 1;
	return 0;
}

void cw_chains_cache_stop(struct cw_server *s)
{
	struct cw_chains_cache *cc = s->chains;

	if (!cc)
		return;
	if (cc->warm_started) {
		pthread_mutex_lock(&cc->lock);
		if (cc->warm_db)
			sqlite3_interrupt(cc->warm_db);
		pthread_mutex_unlock(&cc->lock);
		pthread_join(cc->warm, NULL);
	}
	for (int i = 0; i < CACHE_ENTRIES; i++)
		free(cc->e[i].body);
	pthread_mutex_destroy(&cc->lock);
	pthread_cond_destroy(&cc->cond);
	free(cc);
	s->chains = NULL;
}

int cw_chains_cached_count(struct cw_server *s)
{
	struct cw_chains_cache *cc = s->chains;
	struct cache_entry *best = NULL;
	int n = -1;

	if (!cc)
		return -1;
	pthread_mutex_lock(&cc->lock);
	for (int i = 0; i < CACHE_ENTRIES; i++) {
		struct cache_entry *e = &cc->e[i];

		if (e->state == ENTRY_READY && !strcmp(e->key, CW_CHAINS_DEFAULT_KEY) && (!best || e->used_ns > best->used_ns))
			best = e;
	}
	if (best) {
		json_t *j = json_loads(best->body, 0, NULL);

		n = j ? (int)json_array_size(json_object_get(j, "chains")) : -1;
		json_decref(j);
	}
	pthread_mutex_unlock(&cc->lock);
	return n;
}
