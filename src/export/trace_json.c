/* Chrome trace JSON: streaming writer and slice nesting (trace_json.h). */
#include "export/trace_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

/* 15 significant digits print a relative timestamp of up to ~11 days in
 * microseconds with all its nanosecond digits, and %g drops the trailing
 * zeros, so equal inputs give byte-identical files. */
#define TS_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

static int put(struct cw_tracew *w, const char *s)
{
	if (w->err)
		return w->err;
	if (fputs(s, w->f) == EOF)
		w->err = -EIO;
	return w->err;
}

int cw_tracew_begin(struct cw_tracew *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	return put(w, "{\"traceEvents\":[\n");
}

int cw_tracew_event(struct cw_tracew *w, json_t *ev)
{
	int ret;

	if (!ev)
		return w->err ? w->err : (w->err = -ENOMEM);
	if (!w->err && w->nevents && put(w, ",\n")) {
		json_decref(ev);
		return w->err;
	}
	ret = w->err ? w->err : json_dumpf(ev, w->f, TS_FLAGS);
	json_decref(ev);
	if (ret && !w->err)
		w->err = -EIO;
	if (!w->err)
		w->nevents++;
	return w->err;
}

int cw_tracew_end(struct cw_tracew *w, json_t *other)
{
	put(w, "\n],\"displayTimeUnit\":\"ms\"");
	if (other) {
		put(w, ",\"otherData\":");
		if (!w->err && json_dumpf(other, w->f, TS_FLAGS))
			w->err = -EIO;
		json_decref(other);
	}
	put(w, "}\n");
	if (!w->err && fflush(w->f))
		w->err = -errno;
	return w->err;
}

/* Longer text from the database is cut: the longest demangled kernel names
 * fit, and a hostile name repeated in every slice stays within a small
 * multiple of the database's size. */
#define TRACE_STR_MAX 2048

json_t *cw_trace_str(const char *s)
{
	return cw_json_strcap(s ? s : "", TRACE_STR_MAX);
}

json_t *cw_trace_strf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return cw_trace_str(buf);
}

json_t *cw_trace_us(int64_t ns)
{
	return json_real((double)ns / 1000.0);
}

static int slice_cmp(const void *a, const void *b)
{
	const struct cw_slice *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1; /* the enclosing one first */
	return x->key < y->key ? -1 : x->key > y->key;
}

/* One open-slice stack per lane. */
struct cw_lane {
	int64_t *ends;
	size_t n, cap;
};

static int lane_push(struct cw_lane *l, int64_t end)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 16;
		int64_t *ne = realloc(l->ends, nc * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		l->ends = ne;
		l->cap = nc;
	}
	l->ends[l->n++] = end;
	return 0;
}

int cw_lanes_place(struct cw_lanes *ls, int64_t start, int64_t end, int max_lanes)
{
	int l, ret;

	for (l = 0; l < ls->n; l++) {
		struct cw_lane *ln = &ls->v[l];
		/* Close what ended before this slice starts. */
		while (ln->n && ln->ends[ln->n - 1] <= start)
			ln->n--;
		if (!ln->n || ln->ends[ln->n - 1] >= end)
			break;
	}
	if (l == ls->n && ls->n >= max_lanes)
		return -1;
	if (l == ls->n) {
		if (ls->n == ls->cap) {
			int nc = ls->cap ? ls->cap * 2 : 4;
			struct cw_lane *nv = realloc(ls->v, (size_t)nc * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			memset(nv + ls->cap, 0, (size_t)(nc - ls->cap) * sizeof(*nv));
			ls->v = nv;
			ls->cap = nc;
		}
		ls->v[ls->n++].n = 0; /* a lane used before a reset keeps its buffer */
	}
	ret = lane_push(&ls->v[l], end);
	return ret < 0 ? ret : l;
}

void cw_lanes_reset(struct cw_lanes *ls)
{
	for (int l = 0; l < ls->n; l++)
		ls->v[l].n = 0;
	ls->n = 0;
}

void cw_lanes_free(struct cw_lanes *ls)
{
	for (int l = 0; l < ls->cap; l++)
		free(ls->v[l].ends);
	free(ls->v);
	memset(ls, 0, sizeof(*ls));
}

int cw_slices_assign_lanes(struct cw_slice *v, size_t n, int max_lanes)
{
	struct cw_lanes ls = { 0 };
	int ret = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), slice_cmp);
	for (size_t i = 0; i < n && ret >= 0; i++) {
		int l = cw_lanes_place(&ls, v[i].start, v[i].end, max_lanes);

		if (l == -ENOMEM)
			ret = l;
		else
			v[i].lane = l;
	}
	if (ret >= 0)
		ret = ls.n;
	cw_lanes_free(&ls);
	return ret;
}

int cw_slices_nest_ok(const struct cw_slice *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n && v[j].start < v[i].end; j++)
			if (v[i].lane >= 0 && v[j].lane == v[i].lane && v[j].end > v[i].end)
				return 0;
	return 1;
}
