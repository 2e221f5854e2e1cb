/* A user SQL result as the HTTPS API's JSON text, built row by row
 * (ro_query.h, cw_ro_query_json).
 *
 * The API used to collect every row, turn them into a JSON tree and then
 * into text: three copies of the result alive at once (a 128 MiB result
 * held ~600 MiB). Here each row goes straight into the answer's text, a
 * blob as hex without a copy, and the text's growth is charged to the
 * statement's heap bound with SQLite's own memory (ro_heap.c), so what a
 * query holds, rows being read and answer together, stays within it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/ro_guard.h"
#include "store/ro_query.h"

struct rows_ctx {
	struct cw_ro_json *j;
	int too_big;
	int refused;
};

/* Makes room for n more bytes (and a NUL): 0, -E2BIG past the cap, or
 * -ENOMEM when the heap bound refuses the growth. */
static int room(struct rows_ctx *c, size_t n)
{
	struct cw_ro_json *j = c->j;
	size_t need = j->len + n + 1, a;
	char *p;

	if (j->len + n > j->cap) {
		c->too_big = 1;
		return -E2BIG;
	}
	if (need <= j->alloc)
		return 0;
	a = j->alloc ? j->alloc + j->alloc / 2 : 4096;
	if (a < need)
		a = need;
	if (a > j->cap + 1)
		a = j->cap + 1;
	if (cw_ro_heap_charge((int64_t)(a - j->alloc))) {
		c->refused = 1;
		return -ENOMEM;
	}
	p = realloc(j->text, a);
	if (!p)
		return -ENOMEM;
	j->text = p;
	j->alloc = a;
	return 0;
}

static int add(struct rows_ctx *c, const char *s, size_t n)
{
	int rc = room(c, n);

	if (rc)
		return rc;
	memcpy(c->j->text + c->j->len, s, n);
	c->j->len += n;
	c->j->text[c->j->len] = '\0';
	return 0;
}

static int dump_cb(const char *buf, size_t size, void *data)
{
	return add(data, buf, size) ? -1 : 0;
}

/* A blob as its lower-case hex in quotes, two digits a store: a 16 MiB
 * blob is written within the statement's time limit on a loaded host. */
static int add_hex(struct rows_ctx *c, const unsigned char *b, size_t n)
{
	static char pairs[512];
	static const char hex[] = "0123456789abcdef";
	char *o;
	int rc = room(c, 2 * n + 2);

	if (rc)
		return rc;
	if (!pairs[0])
		for (int i = 0; i < 256; i++) {
			pairs[2 * i] = hex[i >> 4];
			pairs[2 * i + 1] = hex[i & 15];
		}
	o = c->j->text + c->j->len;
	*o++ = '"';
	for (size_t i = 0; i < n; i++, o += 2)
		memcpy(o, &pairs[2 * b[i]], 2);
	*o = '"';
	c->j->len += 2 * n + 2;
	c->j->text[c->j->len] = '\0';
	return 0;
}

/* One cell other than a blob, as jansson writes it (the reply's flags). A
 * text cell's copy in the JSON value is charged while it lives. */
static int add_value(struct rows_ctx *c, const struct cw_ro_value *v)
{
	int64_t tmp = v->type == CW_RO_TEXT ? 2 * (int64_t)v->len : 0;
	json_t *x;
	int rc;

	if (tmp && cw_ro_heap_charge(tmp)) {
		c->refused = 1;
		return -ENOMEM;
	}
	x = cw_ro_value_json(v);
	if (!x)
		rc = -ENOMEM;
	else if (json_dump_callback(x, dump_cb, c, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10)))
		rc = c->too_big ? -E2BIG : -ENOMEM;
	else
		rc = 0;
	json_decref(x);
	if (tmp)
		cw_ro_heap_charge(-tmp);
	return rc;
}

static int on_row(void *arg, int ncols, const char *const *names, const struct cw_ro_value *vals)
{
	struct rows_ctx *c = arg;
	struct cw_ro_json *j = c->j;
	int rc, i;

	if (!j->names) {
		if (!(j->names = calloc((size_t)ncols + 1, sizeof(*j->names))))
			return -ENOMEM;
		j->ncols = ncols;
		for (i = 0; i < ncols; i++)
			if (!(j->names[i] = strdup(names[i])))
				return -ENOMEM;
	}
	if ((rc = add(c, j->info.rows ? ",[" : "[", j->info.rows ? 2 : 1)))
		return rc;
	for (i = 0; i < ncols; i++) {
		if (i && (rc = add(c, ",", 1)))
			return rc;
		rc = vals[i].type == CW_RO_BLOB ? add_hex(c, vals[i].p, vals[i].len) : add_value(c, &vals[i]);
		if (rc)
			return rc;
	}
	/* cw_ro_exec counts the row after this returns. */
	j->info.rows++;
	return add(c, "]", 1);
}

int cw_ro_query_json(const char *db_path, const char *sql, const struct cw_ro_value *params, int nparams,
		     const struct cw_ro_query_limits *lim, size_t cap, struct cw_ro_json *out, char *err,
		     size_t errlen)
{
	struct rows_ctx c = { out, 0, 0 };
	struct cw_ro_db *q;
	int rc;

	memset(out, 0, sizeof(*out));
	out->cap = cap;
	rc = cw_ro_open(&q, db_path, err, errlen);
	if (rc)
		return rc;
	if (errlen)
		err[0] = '\0';
	/* Outside the statement: not charged, and always there. */
	if (!(out->text = malloc(4096))) {
		cw_ro_close(q);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	out->alloc = 4096;
	memcpy(out->text, "{\"rows\":[", 10);
	out->len = 9;
	rc = cw_ro_exec(q, sql, params, nparams, lim, on_row, &c, &out->info, err, errlen);
	if (c.too_big) {
		rc = -E2BIG;
		snprintf(err, errlen, "result is larger than %zu MiB; select fewer columns or rows", cap >> 20);
	} else if (c.refused) {
		rc = -ENOMEM;
		snprintf(err, errlen, "query exceeded the %lld MiB memory limit", (long long)(CW_RO_MAX_HEAP_BYTES >> 20));
	} else if (rc == -ENOMEM && errlen && !err[0]) {
		snprintf(err, errlen, "out of memory");
	}
	if (!rc && !out->names) {
		struct cw_ro_result r = { 0 };

		rc = cw_ro_result_names(q, sql, &r);
		out->names = r.names;
		out->ncols = r.ncols;
		if (rc)
			snprintf(err, errlen, "out of memory");
	}
	cw_ro_close(q);
	if (rc)
		cw_ro_json_free(out);
	return rc;
}

int cw_ro_json_finish(struct cw_ro_json *out, json_t *meta)
{
	char *m = meta ? json_dumps(meta, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	size_t n = m ? strlen(m) : 0;
	char *p;

	/* m is "{...}": its members follow the rows. */
	if (!m || n < 2) {
		free(m);
		return -ENOMEM;
	}
	p = realloc(out->text, out->len + n + 2);
	if (!p) {
		free(m);
		return -ENOMEM;
	}
	out->text = p;
	out->text[out->len++] = ']';
	if (n > 2)
		out->text[out->len++] = ',';
	memcpy(out->text + out->len, m + 1, n - 1);
	out->len += n - 1;
	out->text[out->len] = '\0';
	out->alloc = out->len + 1;
	free(m);
	return 0;
}

void cw_ro_json_free(struct cw_ro_json *out)
{
	for (int i = 0; out->names && i < out->ncols; i++)
		free(out->names[i]);
	free(out->names);
	free(out->text);
	out->names = NULL;
	out->text = NULL;
	out->len = out->alloc = 0;
}
