/* OTLP/HTTP export in the JSON encoding (see otlp.h). The payloads follow
 * the OTLP protobuf's JSON mapping: 64-bit integers as decimal strings,
 * enums as numbers, attributes as {key, value: {stringValue|intValue|
 * doubleValue}}. One worker thread collects and sends, so payloads leave in
 * the order they were built. */
#define _GNU_SOURCE
#include "export/otlp.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/live_metrics.h"
#include "metrics/families.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define BACKOFF_MIN_NS (200ULL * 1000000ULL)
#define BACKOFF_MAX_NS (10ULL * 1000000000ULL)
#define POST_TIMEOUT_MS 10000L
#define MAX_LOG_RECORDS 1000 /* chains per logs payload; the rest next round */

struct payload {
	const char *path; /* "/v1/metrics" or "/v1/logs" */
	char *body;
	int nchains;      /* log records of chains in body */
};

struct cw_otlp {
	struct cw_otlp_opts o;
	char *endpoint, *db_path, *node, *ca_file;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	uint64_t flush_ns;
	struct payload *q; /* ring of max_queue */
	unsigned head, len;
	struct cw_otlp_stats st;
	int64_t last_chain_id;
	uint64_t start_wall_ns;
};

/* ---- payload building ---- */

static json_t *attr_str(const char *k, const char *v)
{
	return json_pack("{s:s,s:{s:o}}", "key", k, "value", "stringValue", cw_json_str(v ? v : ""));
}

static json_t *attr_int(const char *k, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	return json_pack("{s:s,s:{s:s}}", "key", k, "value", "intValue", buf);
}

static json_t *attr_double(const char *k, double v)
{
	return json_pack("{s:s,s:{s:f}}", "key", k, "value", "doubleValue", v);
}

static json_t *u64s(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return cw_json_str(buf);
}

static json_t *resource(const char *node)
{
	json_t *a = json_array();

	json_array_append_new(a, attr_str("service.name", "causeway"));
	json_array_append_new(a, attr_str("service.version", CW_VERSION));
	json_array_append_new(a, attr_str("host.name", node));
	return json_pack("{s:o}", "attributes", a);
}

struct hist_ctx {
	json_t *points;
	uint64_t start, now;
	const char *node;
};

static int add_hist_point(void *ctx, const struct cw_prom_series *s)
{
	struct hist_ctx *h = ctx;
	json_t *attrs = json_array(), *counts = json_array(), *bounds = json_array();
	unsigned b;

	json_array_append_new(attrs, attr_str("node", s->node[0] ? s->node : h->node));
	if (s->process[0])
		json_array_append_new(attrs, attr_str("process", s->process));
	/* The /metrics tenant labels (docs/metrics.md), under the names
	 * /metrics uses so one query language fits both. */
	if (s->container[0])
		json_array_append_new(attrs, attr_str("container", s->container));
	if (s->pod[0])
		json_array_append_new(attrs, attr_str("pod", s->pod));
	if (s->ns[0])
		json_array_append_new(attrs, attr_str("namespace", s->ns));
	json_array_append_new(attrs, attr_str("source", s->source));
	json_array_append_new(attrs, attr_str("op", s->op));
	for (b = 0; b <= CW_PROM_BUCKETS; b++) {
		json_array_append_new(counts, u64s(s->buckets[b]));
		if (b < CW_PROM_BUCKETS)
			json_array_append_new(bounds, json_real(cw_prom_bucket_le(b)));
	}
	json_array_append_new(h->points,
			      json_pack("{s:o,s:o,s:o,s:o,s:f,s:o,s:o}", "attributes", attrs,
					"startTimeUnixNano", u64s(h->start), "timeUnixNano",
					u64s(h->now), "count", u64s(s->count), "sum",
					(double)s->sum_ns / 1e9, "bucketCounts", counts,
					"explicitBounds", bounds));
	return 0;
}

static json_t *sum_metric(const char *name, const char *desc, json_t *points)
{
	return json_pack("{s:s,s:s,s:s,s:{s:i,s:b,s:o}}", "name", name, "description", desc, "unit",
			 "1", "sum", "aggregationTemporality", 2, "isMonotonic", 1, "dataPoints",
			 points);
}

/* Loss and aggregation counters of the stored sessions, per node. */
static void counter_points(sqlite3 *db, uint64_t start, uint64_t now, json_t *lost, json_t *agg)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db,
			       "SELECT node, name, CAST(total(value) AS INTEGER) FROM counters GROUP BY node, name "
			       "ORDER BY node, name",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		long long v = sqlite3_column_int64(st, 2);
		json_t *attrs = json_array(), *target = NULL;

		if (name && cw_metrics_counter_is_loss(name)) {
			target = lost;
			json_array_append_new(attrs, attr_str("counter", name));
		} else if (name && !strcmp(name, "trace.cuda.aggregated")) {
			target = agg;
		}
		if (!target) {
			json_decref(attrs);
			continue;
		}
		json_array_insert_new(attrs, 0, attr_str("node", node));
		json_array_append_new(target,
				      json_pack("{s:o,s:o,s:o,s:o}", "attributes", attrs,
						"startTimeUnixNano", u64s(start), "timeUnixNano",
						u64s(now), "asInt", u64s((uint64_t)(v < 0 ? 0 : v))));
	}
	sqlite3_finalize(st);
}

static int open_ro(const char *path, struct cw_store **st)
{
	char err[256];

	return cw_store_open(st, path, CW_STORE_READONLY, err, sizeof(err));
}

char *cw_otlp_metrics_payload(const char *db_path, const char *node, struct cw_live_metrics *live,
			      uint64_t start_wall_ns, uint64_t now_wall_ns)
{
	struct hist_ctx h = { json_array(), start_wall_ns, now_wall_ns, node };
	json_t *metrics = json_array(), *lost = json_array(), *agg = json_array(), *doc;
	struct cw_store *st = NULL;
	char *out;

	if (open_ro(db_path, &st))
		st = NULL;
	if (live) {
		struct cw_prom_series *v = NULL;
		json_t *errs = json_array();
		unsigned n = 0, i;

		if (!cw_live_metrics_series(live, &v, &n))
			for (i = 0; i < n; i++) {
				add_hist_point(&h, &v[i]);
				json_array_append_new(
					errs, json_pack("{s:[o,o,o,o],s:o,s:o,s:o}", "attributes",
							attr_str("node", node), attr_str("process", v[i].process),
							attr_str("source", v[i].source), attr_str("op", v[i].op),
							"startTimeUnixNano", u64s(start_wall_ns), "timeUnixNano",
							u64s(now_wall_ns), "asInt", u64s(v[i].errors)));
			}
		free(v);
		json_array_append_new(metrics, sum_metric("causeway.op.errors",
							  "Traced calls that returned an error code.", errs));
	} else if (st) {
		cw_metrics_store_op_series(st->db, add_hist_point, &h);
	}
	json_array_insert_new(metrics, 0,
			      json_pack("{s:s,s:s,s:s,s:{s:i,s:o}}", "name", "causeway.op.duration",
					"description", "Duration of traced calls per op.", "unit", "s",
					"histogram", "aggregationTemporality", 2, "dataPoints", h.points));
	if (st)
		counter_points(st->db, start_wall_ns, now_wall_ns, lost, agg);
	json_array_append_new(metrics, sum_metric("causeway.events.lost",
						  "Records, calls or rows lost, by the counter "
						  "that counted them.", lost));
	json_array_append_new(metrics, sum_metric("causeway.calls.aggregated",
						  "Calls counted in the kernel instead of stored "
						  "one by one.", agg));
	cw_store_close(st);
	doc = json_pack("{s:[{s:o,s:[{s:{s:s,s:s},s:o}]}]}", "resourceMetrics", "resource",
			resource(node), "scopeMetrics", "scope", "name", "causeway", "version",
			CW_VERSION, "metrics", metrics);
	out = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return out;
}

static int severity_number(const char *sev)
{
	/* OTLP SeverityNumber: INFO 9, WARN 13, ERROR 17. */
	if (sev && !strcmp(sev, "HIGH"))
		return 17;
	if (sev && !strcmp(sev, "MEDIUM"))
		return 13;
	return 9;
}

char *cw_otlp_logs_payload(const char *db_path, const char *node, int64_t *after_id, int *n)
{
	json_t *records = json_array(), *doc;
	struct cw_store *st = NULL;
	sqlite3_stmt *q;
	char *out = NULL;

	*n = 0;
	if (open_ro(db_path, &st)) {
		json_decref(records);
		return NULL;
	}
	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, node, created_wall_ns, severity, kind, op, summary, pid, tid, "
			       "rank, explained_share, p99_ns, tail_ratio, python_file, python_line, "
			       "python_function FROM chains WHERE id > ?1 ORDER BY id LIMIT ?2",
			       -1, &q, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(q, 1, *after_id);
	sqlite3_bind_int(q, 2, MAX_LOG_RECORDS);
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *sev = (const char *)sqlite3_column_text(q, 3);
		json_t *a = json_array();
		static const struct {
			int col;
			const char *key;
		} ints[] = { { 7, "process.pid" }, { 8, "thread.id" }, { 9, "causeway.rank" },
			     { 11, "causeway.p99_ns" }, { 14, "code.lineno" } };

		*after_id = sqlite3_column_int64(q, 0);
		json_array_append_new(a, attr_int("causeway.chain.id", *after_id));
		json_array_append_new(a, attr_str("node", (const char *)sqlite3_column_text(q, 1)));
		json_array_append_new(a, attr_str("causeway.chain.kind",
						  (const char *)sqlite3_column_text(q, 4)));
		json_array_append_new(a, attr_str("causeway.op", (const char *)sqlite3_column_text(q, 5)));
		for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
			if (sqlite3_column_type(q, ints[i].col) != SQLITE_NULL)
				json_array_append_new(a, attr_int(ints[i].key,
								  sqlite3_column_int64(q, ints[i].col)));
		if (sqlite3_column_type(q, 10) != SQLITE_NULL)
			json_array_append_new(a, attr_double("causeway.explained_share",
							     sqlite3_column_double(q, 10)));
		if (sqlite3_column_type(q, 12) != SQLITE_NULL)
			json_array_append_new(a, attr_double("causeway.tail_ratio",
							     sqlite3_column_double(q, 12)));
		if (sqlite3_column_type(q, 13) != SQLITE_NULL)
			json_array_append_new(a, attr_str("code.filepath",
							  (const char *)sqlite3_column_text(q, 13)));
		if (sqlite3_column_type(q, 15) != SQLITE_NULL)
			json_array_append_new(a, attr_str("code.function",
							  (const char *)sqlite3_column_text(q, 15)));
		json_array_append_new(
			records,
			json_pack("{s:o,s:o,s:i,s:o,s:{s:o},s:o}", "timeUnixNano",
				  u64s((uint64_t)sqlite3_column_int64(q, 2)), "observedTimeUnixNano",
				  u64s(cw_realtime_ns()), "severityNumber", severity_number(sev),
				  "severityText", cw_json_str(sev ? sev : ""), "body", "stringValue",
				  cw_json_str((const char *)sqlite3_column_text(q, 6) ?
					  (const char *)sqlite3_column_text(q, 6) : ""),
				  "attributes", a));
		(*n)++;
	}
	sqlite3_finalize(q);
	if (*n) {
		doc = json_pack("{s:[{s:o,s:[{s:{s:s,s:s},s:O}]}]}", "resourceLogs", "resource",
				resource(node), "scopeLogs", "scope", "name", "causeway", "version",
				CW_VERSION, "logRecords", records);
		out = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
	}
out:
	json_decref(records);
	cw_store_close(st);
	return out;
}

/* ---- queue and sender ---- */

/* Lock held. Appends; past the bound the oldest payload goes. */
static void enqueue(struct cw_otlp *x, const char *path, char *body, int nchains)
{
	struct payload *p;

	if (!body)
		return;
	if (strlen(body) > CW_OTLP_MAX_PAYLOAD) {
		free(body);
		x->st.dropped_queue++;
		return;
	}
	if (x->len == x->o.max_queue) {
		free(x->q[x->head].body);
		x->head = (x->head + 1) % x->o.max_queue;
		x->len--;
		x->st.dropped_queue++;
	}
	p = &x->q[(x->head + x->len) % x->o.max_queue];
	p->path = path;
	p->body = body;
	p->nchains = nchains;
	x->len++;
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
	(void)ptr;
	(void)ud;
	return size * nmemb;
}

/* 0 delivered, 1 retry later, -1 refused for good. */
static int post(struct cw_otlp *x, CURL *c, const struct payload *p)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char url[2048];
	long code = 0;
	CURLcode rc;

	snprintf(url, sizeof(url), "%s%s", x->endpoint, p->path);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(p->body));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, POST_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (x->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, x->ca_file);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	if (rc != CURLE_OK)
		return 1;
	if (code >= 200 && code < 300)
		return 0;
	if (code == 408 || code == 429 || code >= 500)
		return 1;
	return -1;
}

static void collect(struct cw_otlp *x)
{
	uint64_t now = cw_realtime_ns();
	char *m = cw_otlp_metrics_payload(x->db_path, x->node, x->o.live, x->start_wall_ns, now);
	int64_t after;
	char *l;
	int n;

	pthread_mutex_lock(&x->lock);
	after = x->last_chain_id;
	pthread_mutex_unlock(&x->lock);
	l = cw_otlp_logs_payload(x->db_path, x->node, &after, &n);
	pthread_mutex_lock(&x->lock);
	enqueue(x, "/v1/metrics", m, 0);
	enqueue(x, "/v1/logs", l, n);
	x->last_chain_id = after;
	pthread_mutex_unlock(&x->lock);
}

/* Sends queued payloads in order until the queue is empty (0) or a post
 * must be retried (1). */
static int drain(struct cw_otlp *x, CURL *c)
{
	for (;;) {
		struct payload p;
		int r;

		pthread_mutex_lock(&x->lock);
		if (!x->len) {
			pthread_mutex_unlock(&x->lock);
			return 0;
		}
		p = x->q[x->head];
		pthread_mutex_unlock(&x->lock);
		r = post(x, c, &p);
		pthread_mutex_lock(&x->lock);
		if (r > 0) {
			x->st.retries++;
			pthread_mutex_unlock(&x->lock);
			return 1;
		}
		/* Only this thread enqueues, so p is still the head. */
		x->head = (x->head + 1) % x->o.max_queue;
		x->len--;
		free(p.body);
		if (r == 0) {
			x->st.sent++;
			x->st.chains += (uint64_t)p.nchains;
		} else
			x->st.rejected++;
		pthread_mutex_unlock(&x->lock);
	}
}

static void wait_until(struct cw_otlp *x, uint64_t deadline_mono)
{
	struct timespec ts;
	uint64_t now = cw_monotonic_ns();
	uint64_t wall = cw_realtime_ns() + (deadline_mono > now ? deadline_mono - now : 0);

	ts.tv_sec = (time_t)(wall / 1000000000ULL);
	ts.tv_nsec = (long)(wall % 1000000000ULL);
	pthread_mutex_lock(&x->lock);
	if (!x->stop)
		pthread_cond_timedwait(&x->cond, &x->lock, &ts);
	pthread_mutex_unlock(&x->lock);
}

static void *worker(void *arg)
{
	struct cw_otlp *x = arg;
	uint64_t next_collect = cw_monotonic_ns(), backoff = 0, retry_at = 0;
	CURL *c = curl_easy_init();
	int stop;

	for (;;) {
		uint64_t now = cw_monotonic_ns(), wake;

		pthread_mutex_lock(&x->lock);
		stop = x->stop;
		pthread_mutex_unlock(&x->lock);
		if (stop)
			break;
		if (now >= next_collect) {
			collect(x);
			next_collect = now + x->o.interval_ns;
		}
		if (c && now >= retry_at) {
			if (drain(x, c)) {
				backoff = backoff ? backoff * 2 : BACKOFF_MIN_NS;
				if (backoff > BACKOFF_MAX_NS)
					backoff = BACKOFF_MAX_NS;
				retry_at = cw_monotonic_ns() + backoff;
			} else {
				backoff = 0;
				retry_at = 0;
			}
		}
		wake = next_collect;
		if (retry_at && retry_at < wake)
			wake = retry_at;
		wait_until(x, wake);
	}
	/* Stopping: the last round, then deliver what the flush time allows. */
	collect(x);
	if (c) {
		uint64_t end = cw_monotonic_ns() + x->flush_ns;

		backoff = BACKOFF_MIN_NS;
		while (drain(x, c) && cw_monotonic_ns() + backoff < end) {
			struct timespec ts = { (time_t)(backoff / 1000000000ULL),
					       (long)(backoff % 1000000000ULL) };

			nanosleep(&ts, NULL);
			backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
		}
		curl_easy_cleanup(c);
	}
	return NULL;
}

/* The exporter's memory (NULL is fine); the thread and its lock are the
 * caller's. */
static void otlp_free(struct cw_otlp *x)
{
	if (!x)
		return;
	free(x->q);
	free(x->endpoint);
	free(x->db_path);
	free(x->node);
	free(x->ca_file);
	free(x);
}

int cw_otlp_start(struct cw_otlp **out, const struct cw_otlp_opts *o, char *err, size_t errlen)
{
	struct cw_otlp *x;
	size_t n;

	*out = NULL;
	if (!o->endpoint || (strncmp(o->endpoint, "http://", 7) && strncmp(o->endpoint, "https://", 8)) ||
	    strlen(o->endpoint) > 1024 || strpbrk(o->endpoint, " \t\r\n\"")) {
		snprintf(err, errlen, "bad OTLP endpoint \"%.100s\" (http://HOST:PORT or https://...)",
			 o->endpoint ? o->endpoint : "");
		return -EINVAL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		goto nomem;
	x->o = *o;
	if (!x->o.interval_ns)
		x->o.interval_ns = CW_OTLP_DEFAULT_INTERVAL_NS;
	if (!x->o.max_queue)
		x->o.max_queue = CW_OTLP_DEFAULT_QUEUE;
	x->endpoint = strdup(o->endpoint);
	x->db_path = strdup(o->db_path);
	x->node = strdup(o->node ? o->node : "");
	x->ca_file = o->ca_file ? strdup(o->ca_file) : NULL;
	x->q = calloc(x->o.max_queue, sizeof(*x->q));
	if (!x->endpoint || !x->db_path || !x->node || !x->q || (o->ca_file && !x->ca_file))
		goto nomem;
	/* "http://h:4318/" and "http://h:4318" name the same receiver. */
	n = strlen(x->endpoint);
	while (n > 8 && x->endpoint[n - 1] == '/')
		x->endpoint[--n] = '\0';
	x->start_wall_ns = cw_realtime_ns();
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (pthread_create(&x->th, NULL, worker, x)) {
		snprintf(err, errlen, "cannot start the OTLP exporter thread");
		pthread_mutex_destroy(&x->lock);
		pthread_cond_destroy(&x->cond);
		otlp_free(x);
		return -EAGAIN;
	}
	*out = x;
	return 0;
nomem:
	otlp_free(x);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

void cw_otlp_stop(struct cw_otlp *x, uint64_t flush_ns, struct cw_otlp_stats *final)
{
	unsigned i;

	if (final)
		memset(final, 0, sizeof(*final));
	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	x->stop = 1;
	x->flush_ns = flush_ns;
	pthread_cond_signal(&x->cond);
	pthread_mutex_unlock(&x->lock);
	pthread_join(x->th, NULL);
	if (final) {
		*final = x->st;
		final->dropped_queue += x->len;
	}
	for (i = 0; i < x->len; i++)
		free(x->q[(x->head + i) % x->o.max_queue].body);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->cond);
	otlp_free(x);
}

void cw_otlp_get_stats(struct cw_otlp *x, struct cw_otlp_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	*s = x->st;
	s->queued = x->len;
	pthread_mutex_unlock(&x->lock);
}
