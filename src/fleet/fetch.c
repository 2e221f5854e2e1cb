/* Tables fetched from every agent into a local store: the fan-out's
 * read-only query API, rows bound by their JSON types, Python stacks
 * interned again locally (export --nodes, the fleet's NCCL view). */
#define _GNU_SOURCE
#include "fleet/fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/fetch_events.h"
#include "store/store.h"

void cw_fleet_warns_add(struct cw_fleet_warns *w, const struct cw_fleet_result *r)
{
	for (int i = 0; i < r->nwarnings; i++) {
		int seen = 0;
		char **nv;
		for (int k = 0; k < w->n && !seen; k++)
			seen = cw_fleet_warning_same(w->v[k], r->warnings[i]);
		if (seen || !(nv = realloc(w->v, (size_t)(w->n + 1) * sizeof(*nv))))
			continue;
		w->v = nv;
		if (!(w->v[w->n] = strdup(r->warnings[i])))
			continue;
		w->n++;
		if (w->fn)
			w->fn(w->arg, r->warnings[i]);
	}
}

static int unhex(const char *s, unsigned char **out, size_t *len)
{
	size_t n = strlen(s);
	unsigned char *b;

	if (n % 2 || !(b = malloc(n / 2 + 1)))
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned hi, lo;
		if (sscanf(s + 2 * i, "%1x%1x", &hi, &lo) != 2) {
			free(b);
			return -EINVAL;
		}
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	*out = b;
	*len = n / 2;
	return 0;
}

/* Binds an agent's JSON value; types are the agent's, checked here. */
static int bind_json(sqlite3_stmt *st, int i, json_t *v, int hex)
{
	if (json_is_integer(v))
		return sqlite3_bind_int64(st, i, json_integer_value(v));
	if (json_is_real(v))
		return sqlite3_bind_double(st, i, json_real_value(v));
	if (json_is_boolean(v))
		return sqlite3_bind_int(st, i, json_is_true(v));
	if (json_is_string(v) && hex) {
		unsigned char *b;
		size_t len;
		if (unhex(json_string_value(v), &b, &len))
			return SQLITE_MISMATCH;
		return sqlite3_bind_blob(st, i, b, (int)len, free);
	}
	if (json_is_string(v))
		return sqlite3_bind_text(st, i, json_string_value(v), (int)json_string_length(v), SQLITE_TRANSIENT);
	return sqlite3_bind_null(st, i);
}

/* Rows of one fetch ([node, cols...]) into the local store; events go
 * through the sink (fetch_events.h), straight into their tables. */
static int put_rows(sqlite3 *db, const struct cw_fleet_fetch *f, json_t *merged, struct cw_evsink *sink)
{
	json_t *rows = json_object_get(merged, "rows"), *row;
	sqlite3_stmt *ins = NULL;
	size_t ri;
	int ret = 0;

	if (json_array_size(json_object_get(merged, "columns")) != (size_t)f->ncols + 1 + (sink ? 6 : 0))
		return json_array_size(rows) ? -EPROTO : 0;
	if (sink) {
		json_array_foreach(rows, ri, row)
			if ((ret = cw_evsink_put(sink, row)) < 0)
				return ret;
		return 0;
	}
	if (sqlite3_prepare_v2(db, f->insert, -1, &ins, NULL) != SQLITE_OK)
		return -EIO;
	json_array_foreach(rows, ri, row) {
		for (int k = 0; k <= f->ncols; k++)
			if (bind_json(ins, k + 1, json_array_get(row, (size_t)k), f->hex_col >= 0 && k - 1 == f->hex_col) != SQLITE_OK) {
				ret = -EPROTO;
				goto out;
			}
		/* NOT NULL columns an agent left empty reject the row alone. */
		int rc = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (rc != SQLITE_DONE && rc != SQLITE_CONSTRAINT) {
			ret = cw_sqlite_errno(rc);
			goto out;
		}
	}
out:
	sqlite3_finalize(ins);
	return ret;
}

static json_t *request(const struct cw_fleet_fetch *f, int64_t a, int64_t b, int64_t limit)
{
	json_t *p = json_array();
	int64_t v[3] = { a, b, limit };

	for (int i = 0; i < f->nparams && i < 3; i++)
		json_array_append_new(p, json_integer(v[i]));
	return json_pack("{s:s,s:o,s:I}", "sql", f->select, "params", p, "max_rows", (json_int_t)limit);
}

void cw_fleet_warns_free(struct cw_fleet_warns *w)
{
	for (int i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	w->v = NULL;
	w->n = 0;
}

/* One answer's rows into db in one transaction. */
static int store_rows(sqlite3 *db, const struct cw_fleet_fetch *f, json_t *merged, struct cw_evsink *sink,
		      char *err, size_t errlen)
{
	int ret = cw_exec(db, "BEGIN");

	if (ret)
		return ret;
	ret = put_rows(db, f, merged, sink);
	cw_exec(db, ret ? "ROLLBACK" : "COMMIT");
	if (ret && sink)
		cw_evsink_reset(sink);
	if (ret)
		snprintf(err, errlen, "storing the agents' rows: %s",
			 ret == -EPROTO ? "unexpected columns or values" : strerror(-ret));
	return ret;
}

/* Rows per page unless an agent's own row cap is lower. */
#define PAGE_ROWS 10000

struct pager {
	const char *addr;
	char *name;
	int64_t lo, hi; /* ids still to fetch: (lo, hi] */
	int64_t span;   /* ids per page: the agent's row cap or PAGE_ROWS */
	int live;
};

/* "none of the N nodes answered: node "a": ...; node "b": ..." with the
 * agents' own messages, so an error never stands without its cause. */
void cw_fleet_none_answered(const struct cw_fleet_result *r, int n, char *err, size_t errlen)
{
	size_t at;

	at = (size_t)snprintf(err, errlen, "none of the %d node%s answered", n, n == 1 ? "" : "s");
	for (int i = 0; i < r->nwarnings && at < errlen; i++) {
		/* Whole reasons only: what does not fit is counted. */
		if (at + strlen(r->warnings[i]) + 24 >= errlen) {
			snprintf(err + at, errlen - at, "; and %d more", r->nwarnings - i);
			break;
		}
		at += (size_t)snprintf(err + at, errlen - at, "%s %s", i ? ";" : ":", r->warnings[i]);
	}
}

/* Each agent's id range (bounds, or bounds_old where bounds fails). */
static int page_bounds(const struct cw_fleet_opts *fo, const struct cw_fleet_fetch *f, struct pager *pg,
		       struct cw_fleet_warns *w, char *err, size_t errlen)
{
	struct cw_fleet_opts o = *fo;
	char **addrs = calloc((size_t)fo->nnodes + 1, sizeof(*addrs));
	int *map = calloc((size_t)fo->nnodes, sizeof(*map)), pass, nok = 0, ret = 0;

	if (!addrs || !map) {
		free(addrs);
		free(map);
		return -ENOMEM;
	}
	for (int i = 0; i < fo->nnodes; i++)
		pg[i].addr = fo->nodes[i];
	for (pass = 0; pass < 2 && !ret; pass++) {
		struct cw_fleet_result res;
		json_t *req, *merged = NULL;
		int n = 0;

		for (int i = 0; i < fo->nnodes; i++)
			if (!pg[i].live && !pg[i].name)
				map[n] = i, addrs[n++] = fo->nodes[i];
		if (!n || (pass && !f->bounds_old))
			break;
		addrs[n] = NULL;
		o.nodes = addrs;
		o.nnodes = n;
		o.posts = NULL;
		req = json_pack("{s:s}", "sql", pass ? f->bounds_old : f->bounds);
		ret = cw_fleet_query_req(&o, req, &merged, &res, err, errlen);
		json_decref(req);
		/* A failed first pass is retried with the older form: only the
		 * second pass's failures are the agents' word. */
		if (pass || !f->bounds_old)
			cw_fleet_warns_add(w, &res);
		if (ret == -EHOSTUNREACH && (pass || !f->bounds_old)) {
			if (!nok)
				cw_fleet_none_answered(&res, fo->nnodes, err, errlen);
			ret = nok ? 0 : -EHOSTUNREACH;
		} else if (ret == -EHOSTUNREACH) {
			ret = 0;
		}
		for (int j = 0; !ret && j < res.n; j++) {
			struct pager *p = &pg[map[j]];
			json_t *row = json_array_get(json_object_get(res.nodes[j].body, "rows"), 0);
			json_t *cap = json_object_get(res.nodes[j].body, "max_rows");

			if (!res.nodes[j].ok)
				continue;
			if (!(p->name = strdup(res.nodes[j].name))) {
				ret = -ENOMEM;
				break;
			}
			nok++;
			p->span = json_is_integer(cap) && json_integer_value(cap) > 0 && json_integer_value(cap) < PAGE_ROWS
					  ? json_integer_value(cap)
					  : PAGE_ROWS;
			if (json_is_integer(json_array_get(row, 0)) && json_is_integer(json_array_get(row, 1))) {
				p->lo = json_integer_value(json_array_get(row, 0)) - 1;
				p->hi = json_integer_value(json_array_get(row, 1));
				p->live = p->lo < p->hi;
			}
		}
		json_decref(merged);
		cw_fleet_result_free(&res);
	}
	free(addrs);
	free(map);
	return ret;
}

/* Every row of f in the window (a, b) from every agent, page by page. */
static int fetch_paged(sqlite3 *db, const struct cw_fleet_opts *fo, const struct cw_fleet_fetch *f, int64_t a,
		       int64_t b, struct cw_evsink *sink, struct cw_fleet_warns *w, char *err, size_t errlen)
{
	struct pager *pg = calloc((size_t)fo->nnodes, sizeof(*pg));
	char **addrs = calloc((size_t)fo->nnodes + 1, sizeof(*addrs));
	char **bodies = calloc((size_t)fo->nnodes, sizeof(*bodies));
	int *map = calloc((size_t)fo->nnodes, sizeof(*map));
	struct cw_fleet_opts o = *fo;
	int ret;

	if (!pg || !addrs || !bodies || !map) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = page_bounds(fo, f, pg, w, err, errlen)))
		goto out;
	for (;;) {
		struct cw_fleet_result res;
		json_t *merged = NULL;
		int n = 0;

		for (int i = 0; i < fo->nnodes && !ret; i++) {
			struct pager *p = &pg[i];
			int64_t upto;

			if (!p->live)
				continue;
			upto = p->hi - p->lo > p->span ? p->lo + p->span : p->hi;
			json_t *req = json_pack("{s:s,s:[IIII],s:I}", "sql", f->select, "params", (json_int_t)a,
						(json_int_t)b, (json_int_t)p->lo, (json_int_t)upto, "max_rows",
						(json_int_t)p->span);
			if (!req || !(bodies[n] = json_dumps(req, JSON_COMPACT)))
				ret = -ENOMEM;
			json_decref(req);
			map[n] = i;
			addrs[n++] = (char *)p->addr;
		}
		if (ret || !n)
			break;
		addrs[n] = NULL;
		o.nodes = addrs;
		o.nnodes = n;
		o.posts = (const char *const *)bodies;
		ret = cw_fleet_query_req(&o, NULL, &merged, &res, err, errlen);
		cw_fleet_warns_add(w, &res);
		if (ret == -EHOSTUNREACH)
			ret = 0; /* every node's failure is its own warning below */
		for (int j = 0; !ret && j < res.n; j++) {
			struct pager *p = &pg[map[j]];

			if (!res.nodes[j].ok) {
				char msg[256];

				snprintf(msg, sizeof(msg), "node \"%s\": stopped answering; its rows after id %lld are missing",
					 p->name ? p->name : p->addr, (long long)p->lo);
				p->live = 0;
				{
					struct cw_fleet_result one = { .warnings = (char *[]){ msg }, .nwarnings = 1 };
					cw_fleet_warns_add(w, &one);
				}
				continue;
			}
			/* An id range no wider than the row cap cannot be cut;
			 * a node that cuts it anyway would lose rows silently. */
			if (json_is_true(json_object_get(res.nodes[j].body, "truncated"))) {
				snprintf(err, errlen, "node \"%s\" cut a page of %lld ids at its row cap", res.nodes[j].name,
					 (long long)p->span);
				ret = -EPROTO;
				break;
			}
			p->lo = p->hi - p->lo > p->span ? p->lo + p->span : p->hi;
			p->live = p->lo < p->hi;
		}
		if (!ret)
			ret = store_rows(db, f, merged, sink, err, errlen);
		if (!ret && fo->progress)
			fo->progress(fo->progress_arg, NULL, json_array_size(json_object_get(merged, "rows")));
		json_decref(merged);
		cw_fleet_result_free(&res);
		for (int j = 0; j < n; j++) {
			free(bodies[j]);
			bodies[j] = NULL;
		}
		if (ret)
			break;
	}
out:
	for (int i = 0; pg && i < fo->nnodes; i++)
		free(pg[i].name);
	for (int i = 0; bodies && i < fo->nnodes; i++)
		free(bodies[i]);
	free(pg);
	free(addrs);
	free(bodies);
	free(map);
	return ret;
}

int cw_fleet_fetch_rows(sqlite3 *db, const struct cw_fleet_opts *fo, const struct cw_fleet_fetch *f, int64_t a,
			int64_t b, int64_t limit, int events, struct cw_fleet_warns *w, char *err, size_t errlen)
{
	struct cw_fleet_result res;
	struct cw_evsink *sink = NULL;
	json_t *req, *merged = NULL;
	int ret;

	if (events && (ret = cw_evsink_new(&sink, db))) {
		snprintf(err, errlen, "preparing the temporary store failed");
		return ret;
	}
	if (f->bounds) {
		ret = fetch_paged(db, fo, f, a, b, sink, w, err, errlen);
		cw_evsink_free(sink);
		return ret;
	}
	req = request(f, a, b, limit);
	ret = cw_fleet_query_req(fo, req, &merged, &res, err, errlen);
	json_decref(req);
	cw_fleet_warns_add(w, &res);
	if (ret == -EHOSTUNREACH)
		cw_fleet_none_answered(&res, fo->nnodes, err, errlen);
	if (!ret)
		ret = store_rows(db, f, merged, sink, err, errlen);
	json_decref(merged);
	cw_fleet_result_free(&res);
	cw_evsink_free(sink);
	return ret;
}

int cw_fleet_fetch_into(sqlite3 *db, const struct cw_fleet_opts *fo, const char *select, const char *insert, int ncols,
			int nparams, int64_t a, int64_t b, int64_t limit, void (*warn)(void *arg, const char *msg),
			void *warn_arg, char *err, size_t errlen)
{
	struct cw_fleet_fetch f = { select, insert, ncols, -1, nparams, NULL, NULL };
	struct cw_fleet_warns wr = { .fn = warn, .arg = warn_arg };
	int ret = cw_fleet_fetch_rows(db, fo, &f, a, b, limit, 0, &wr, err, errlen);

	cw_fleet_warns_free(&wr);
	return ret;
}

int cw_fleet_tmp_open(struct cw_fleet_tmp *t, const char *tag, const char *name, char *err, size_t errlen)
{
	int ret;

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/causeway-%s-XXXXXX", tag);
	if (!mkdtemp(t->dir)) {
		int e = errno;

		t->dir[0] = '\0';
		snprintf(err, errlen, "cannot create a temporary directory: %s", strerror(e));
		return -e;
	}
	snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, name);
	if ((ret = cw_store_open(&t->st, t->path, CW_STORE_CREATE, err, errlen)))
		return ret;
	/* A scratch file removed at the end: nothing to keep over a crash,
	 * so no sync per page. */
	cw_exec(t->st->db, "PRAGMA synchronous = OFF");
	/* Its page cache (and so SQLite's in-memory sort runs, which it
	 * sizes) is the client's largest memory: 64 MiB unless
	 * $CW_SCRATCH_CACHE_KIB names another bound (docs/fleet.md). */
	cw_scratch_cache(t->st->db);
	return 0;
}

void cw_fleet_tmp_close(struct cw_fleet_tmp *t)
{
	cw_store_close(t->st);
	t->st = NULL;
	if (t->path[0])
		cw_store_remove_files(t->path);
	if (t->dir[0])
		rmdir(t->dir);
}
