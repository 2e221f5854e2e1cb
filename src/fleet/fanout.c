#define _GNU_SOURCE
#include "fleet/fanout.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/utf8.h"

enum xkind { X_MAIN, X_TIME };

struct xfer {
	enum xkind kind;
	int node;
	CURL *h;
	struct strbuf buf;
	uint64_t t0;                  /* realtime when the request was queued */
	uint64_t mono0;
	int nsamples, want;           /* X_TIME: samples taken / wanted (first is warm-up) */
	struct cw_skew_sample *samples;
	char errbuf[CURL_ERROR_SIZE];
	int done;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Length of the "node \"ADDR\": " part of a warning, 0 when none. */
static size_t node_part(const char *s)
{
	const char *e;

	if (strncmp(s, "node \"", 6) || !(e = strstr(s + 6, "\": ")))
		return 0;
	return (size_t)(e + 3 - s);
}

int cw_fleet_warning_same(const char *a, const char *b)
{
	size_t na = node_part(a), nb = node_part(b);

	if (na != nb || strncmp(a, b, na))
		return 0;
	a += na;
	b += nb;
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			while (isdigit((unsigned char)*a))
				a++;
			while (isdigit((unsigned char)*b))
				b++;
			continue;
		}
		if (*a++ != *b++)
			return 0;
	}
	return !*a && !*b;
}

void cw_fleet_warning_add(json_t *arr, const char *msg)
{
	json_t *x;
	size_t i;

	if (!json_is_array(arr) || !msg)
		return;
	json_array_foreach(arr, i, x)
		if (json_is_string(x) && cw_fleet_warning_same(json_string_value(x), msg))
			return;
	json_array_append_new(arr, cw_json_str(msg));
}

__attribute__((format(printf, 2, 3))) static void warn(struct cw_fleet_result *r,
							const char *fmt, ...)
{
	char **w, *s;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	for (int i = 0; i < r->nwarnings; i++)
		if (cw_fleet_warning_same(r->warnings[i], s)) {
			free(s);
			return;
		}
	w = realloc(r->warnings, sizeof(*w) * (size_t)(r->nwarnings + 1));
	if (!w) {
		free(s);
		return;
	}
	r->warnings = w;
	w[r->nwarnings++] = s;
}

int cw_fleet_parse_nodes(const char *csv, char ***out, char *err, size_t errlen)
{
	char **v = NULL, host[256], *dup, *tok, *save = NULL;
	int n = 0, port;

	*out = NULL;
	if (!csv || !*csv) {
		snprintf(err, errlen, "empty node list");
		return -EINVAL;
	}
	if (!(dup = strdup(csv)))
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *a = tok;
		char **nv;

		while (*a == ' ')
			a++;
		if (!strncmp(a, "https://", 8))
			a += 8;
		else if (!strncmp(a, "http://", 7))
			a += 7;
		if (cw_parse_hostport(a, host, sizeof(host), &port)) {
			snprintf(err, errlen, "bad node address \"%s\" (want HOST:PORT)", tok);
			goto inval;
		}
		if (n >= CW_FLEET_MAX_NODES) {
			snprintf(err, errlen, "more than %d nodes", CW_FLEET_MAX_NODES);
			goto inval;
		}
		nv = realloc(v, sizeof(*v) * (size_t)(n + 2));
		if (!nv)
			goto nomem;
		v = nv;
		if (!(v[n] = strdup(tok[0] == ' ' ? a : tok)))
			goto nomem;
		v[++n] = NULL;
	}
	free(dup);
	if (!n) {
		snprintf(err, errlen, "empty node list");
		return -EINVAL;
	}
	*out = v;
	return n;
inval:
	free(dup);
	cw_fleet_free_nodes(v);
	return -EINVAL;
nomem:
	free(dup);
	cw_fleet_free_nodes(v);
	return -ENOMEM;
}

void cw_fleet_free_nodes(char **nodes)
{
	for (char **p = nodes; p && *p; p++)
		free(*p);
	free(nodes);
}

static size_t on_data(char *p, size_t sz, size_t nm, void *arg)
{
	struct xfer *x = arg;

	/* Returning less than given aborts the transfer with a write error:
	 * the response cap is enforced as bytes arrive, not after. */
	if (strbuf_add(&x->buf, p, sz * nm))
		return 0;
	return sz * nm;
}

static const char *scheme_of(const char *addr, const char **hostport)
{
	if (!strncmp(addr, "http://", 7)) {
		*hostport = addr + 7;
		return "http";
	}
	*hostport = !strncmp(addr, "https://", 8) ? addr + 8 : addr;
	return "https";
}

static int setup(const struct cw_fleet_opts *o, struct xfer *x, const char *addr,
		 const char *path, const char *post, struct curl_slist *hdrs, size_t cap,
		 long timeout_ms)
{
	const char *hp, *scheme = scheme_of(addr, &hp);
	char url[2048];
	CURL *h = x->h;

	if ((size_t)snprintf(url, sizeof(url), "%s://%s%s", scheme, hp, path) >= sizeof(url))
		return -E2BIG;
	strbuf_init(&x->buf, cap);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, x);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)cap);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, scheme);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	if (!strcmp(scheme, "https")) {
		/* The agents speak TLS 1.3 only; refuse anything older here too. */
		curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_3);
		if (o->ca_cert)
			curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_cert);
		if (o->client_cert)
			curl_easy_setopt(h, CURLOPT_SSLCERT, o->client_cert);
		if (o->client_key)
			curl_easy_setopt(h, CURLOPT_SSLKEY, o->client_key);
	}
	if (post) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(post));
	}
	return 0;
}

static long remaining_ms(uint64_t deadline)
{
	uint64_t now = cw_monotonic_ns();

	return now >= deadline ? 1 : (long)((deadline - now + 999999) / 1000000);
}

/* A node name from an answer is shown to users and used in rows: accept
 * only what a node may be named (cw_node_name_valid); otherwise the node
 * keeps the address it was asked at. */
static void adopt_name(struct cw_fleet_node *n, json_t *body)
{
	const char *s = json_string_value(json_object_get(body, "node"));
	char *d;

	if (!cw_node_name_valid(s))
		return;
	if ((d = strdup(s))) {
		free(n->name);
		n->name = d;
	}
}

static size_t discard(char *p, size_t sz, size_t nm, void *arg)
{
	(void)p;
	(void)arg;
	return sz * nm;
}

/* Whether addr (TLS refused) speaks plain HTTP: one short GET of the
 * unauthenticated time endpoint, on the failure path only. */
static int answers_plain_http(const char *addr)
{
	const char *hp = !strncmp(addr, "https://", 8) ? addr + 8 : addr;
	char url[600];
	long st = 0;
	CURL *h;

	if ((size_t)snprintf(url, sizeof(url), "http://%s/api/v1/time", hp) >= sizeof(url) || !(h = curl_easy_init()))
		return 0;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)4096);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(h);
	return st >= 100;
}

static void finish_main(struct cw_fleet_result *r, struct xfer *x, CURLcode cc, uint64_t cap)
{
	struct cw_fleet_node *n = &r->nodes[x->node];
	json_error_t je;
	json_t *j;
	long st = 0;

	n->elapsed_ns = cw_monotonic_ns() - x->mono0;
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
	n->http_status = st;
	if (cc != CURLE_OK) {
		if (cc == CURLE_OPERATION_TIMEDOUT)
			warn(r, "node \"%s\": no answer within %llu ms", n->addr,
			     (unsigned long long)(n->elapsed_ns / NSEC_PER_MSEC));
		else if (cc == CURLE_WRITE_ERROR || cc == CURLE_FILESIZE_EXCEEDED)
			warn(r, "node \"%s\": answer larger than %llu bytes, ignored", n->addr,
			     (unsigned long long)cap);
		else if (cc == CURLE_SSL_CONNECT_ERROR && strncmp(n->addr, "http://", 7) && answers_plain_http(n->addr))
			/* OpenSSL's words for a TLS hello meeting a plain-HTTP
			 * server (serve --no-tls) vary ("wrong version number",
			 * SSL_ERROR_SYSCALL): name the cause and the fix. */
			warn(r,
			     "node \"%s\": answers plain HTTP, not TLS (%s); if it runs serve --no-tls, give it as"
			     " http://%s",
			     n->addr, x->errbuf, !strncmp(n->addr, "https://", 8) ? n->addr + 8 : n->addr);
		else
			warn(r, "node \"%s\": %s", n->addr,
			     x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
		return;
	}
	j = json_loadb(strbuf_str(&x->buf), x->buf.len, JSON_REJECT_DUPLICATES, &je);
	if (st != 200) {
		const char *e = j ? json_string_value(json_object_get(j, "error")) : NULL;

		warn(r, "node \"%s\": HTTP %ld%s%.300s", n->addr, st, e ? ": " : "", e ? e : "");
		json_decref(j);
		return;
	}
	if (!j || !json_is_object(j)) {
		warn(r, "node \"%s\": answer is not a causeway JSON object (%s)", n->addr,
		     j ? "wrong type" : je.text);
		json_decref(j);
		return;
	}
	adopt_name(n, j);
	n->body = j;
	n->ok = 1;
	r->nok++;
}

/* Returns 1 when the transfer should be queued again for another sample. */
static int finish_time(struct cw_fleet_result *r, struct xfer *x, CURLcode cc, uint64_t t1)
{
	long st = 0;
	json_t *j;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
	if (cc != CURLE_OK || st != 200)
		return 0;
	j = json_loadb(strbuf_str(&x->buf), x->buf.len, 0, NULL);
	if (j && json_is_integer(json_object_get(j, "realtime_ns")) &&
	    json_integer_value(json_object_get(j, "realtime_ns")) > 0) {
		/* The first answer paid for the TCP and TLS handshakes: its
		 * round trip is not symmetric, so it only warms the connection. */
		if (x->nsamples > 0 || x->want == 1) {
			struct cw_skew_sample *s = &x->samples[x->nsamples - (x->want > 1)];

			s->t0_ns = x->t0;
			s->t1_ns = t1;
			s->server_ns = (uint64_t)json_integer_value(json_object_get(j, "realtime_ns"));
		}
		x->nsamples++;
	}
	json_decref(j);
	return j && x->nsamples < x->want;
}

int cw_fleet_fetch(const struct cw_fleet_opts *o, const char *path, const char *post_json,
		   struct cw_fleet_result *out, char *err, size_t errlen)
{
	uint64_t timeout = o->timeout_ns ? o->timeout_ns : CW_FLEET_DEFAULT_TIMEOUT_NS;
	size_t cap = o->max_response ? o->max_response : CW_FLEET_DEFAULT_MAX_RESPONSE;
	int nsamp = o->skew_samples > 0 ? o->skew_samples : CW_SKEW_DEFAULT_SAMPLES;
	uint64_t warn_ns = o->skew_warn_ns ? o->skew_warn_ns : CW_SKEW_DEFAULT_WARN_NS;
	uint64_t start = cw_monotonic_ns(), deadline = start + timeout;
	struct curl_slist *hdrs = NULL;
	struct xfer *xs = NULL;
	CURLM *m = NULL;
	int nx, i, running = 0, rc = 0;
	char *auth = NULL;

	memset(out, 0, sizeof(*out));
	if (o->nnodes <= 0) {
		snprintf(err, errlen, "no nodes to ask");
		return -EINVAL;
	}
	if (!!o->client_cert != !!o->client_key) {
		snprintf(err, errlen, "--client-cert and --client-key go together");
		return -EINVAL;
	}
	pthread_once(&curl_once, curl_init_once);
	out->n = o->nnodes;
	out->nodes = calloc((size_t)o->nnodes, sizeof(*out->nodes));
	nx = o->nnodes * (o->skew ? 2 : 1);
	xs = calloc((size_t)nx, sizeof(*xs));
	if (!out->nodes || !xs)
		goto nomem;
	hdrs = curl_slist_append(NULL, "Accept: application/json");
	if (post_json || o->posts)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	if (o->token) {
		if (asprintf(&auth, "Authorization: Bearer %s", o->token) < 0)
			goto nomem;
		hdrs = curl_slist_append(hdrs, auth);
		explicit_bzero(auth, strlen(auth));
	}
	if (!hdrs || !(m = curl_multi_init()))
		goto nomem;
	/* One connection per transfer: the skew samples must not queue behind
	 * a slow query on the same connection. */
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
	for (i = 0; i < o->nnodes; i++) {
		out->nodes[i].addr = strdup(o->nodes[i]);
		out->nodes[i].name = strdup(o->nodes[i]);
		if (!out->nodes[i].addr || !out->nodes[i].name)
			goto nomem;
	}
	for (i = 0; i < nx; i++) {
		struct xfer *x = &xs[i];

		x->node = i % o->nnodes;
		x->kind = i < o->nnodes ? X_MAIN : X_TIME;
		if (!(x->h = curl_easy_init()))
			goto nomem;
		if (x->kind == X_TIME) {
			x->want = nsamp + 1;
			if (!(x->samples = calloc((size_t)nsamp, sizeof(*x->samples))))
				goto nomem;
		}
		rc = setup(o, x, o->nodes[x->node], x->kind == X_MAIN ? path : "/api/v1/time",
			   x->kind == X_MAIN ? (o->posts ? o->posts[x->node] : post_json) : NULL, hdrs,
			   x->kind == X_MAIN ? cap : 4096, remaining_ms(deadline));
		if (rc) {
			snprintf(err, errlen, "request path too long");
			goto out;
		}
		x->mono0 = cw_monotonic_ns();
		x->t0 = cw_realtime_ns();
		curl_multi_add_handle(m, x->h);
	}

	for (;;) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			uint64_t t1 = cw_realtime_ns();
			struct xfer *x = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			curl_multi_remove_handle(m, x->h);
			if (x->kind == X_MAIN) {
				finish_main(out, x, msg->data.result, cap);
				x->done = 1;
			} else if (finish_time(out, x, msg->data.result, t1) &&
				   cw_monotonic_ns() < deadline) {
				/* Same easy handle: the connection is reused. */
				strbuf_reset(&x->buf);
				curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, remaining_ms(deadline));
				x->t0 = cw_realtime_ns();
				curl_multi_add_handle(m, x->h);
				running++;
			} else {
				x->done = 1;
			}
		}
		if (!running)
			break;
		/* Stop waiting for clock samples once every node's answer is in:
		 * the query, not the skew estimate, sets the pace. */
		{
			int mains_open = 0;

			for (i = 0; i < o->nnodes; i++)
				mains_open |= !xs[i].done;
			if (!mains_open && cw_monotonic_ns() > start + timeout / 2)
				break;
		}
		if (cw_monotonic_ns() > deadline + 200 * NSEC_PER_MSEC)
			break; /* curl's own timeouts should have fired; never hang */
		curl_multi_poll(m, NULL, 0, 20, NULL);
	}
	for (i = 0; i < o->nnodes; i++)
		if (!xs[i].done)
			warn(out, "node \"%s\": no answer within %llu ms", out->nodes[i].addr,
			     (unsigned long long)(timeout / NSEC_PER_MSEC));
	if (o->skew) {
		for (i = o->nnodes; i < nx; i++) {
			struct xfer *x = &xs[i];
			struct cw_fleet_node *n = &out->nodes[x->node];
			int got = x->nsamples > 1 ? x->nsamples - 1 : 0;

			cw_skew_compute(x->samples, got, &n->skew);
			if (!n->ok)
				continue;
			if (!n->skew.valid) {
				warn(out, "node \"%s\": clock skew unknown (%d of %d samples)",
				     n->name, got, nsamp);
			} else if ((uint64_t)llabs(n->skew.offset_ns) > warn_ns) {
				warn(out,
				     "node \"%s\": clock %.1f ms %s this host (rtt %.2f ms); its "
				     "times are shifted onto this host's clock",
				     n->name, (double)llabs(n->skew.offset_ns) / 1e6,
				     n->skew.offset_ns > 0 ? "ahead of" : "behind",
				     (double)n->skew.rtt_ns / 1e6);
			}
			out->skew_applied |= n->skew.valid;
		}
	}
	rc = out->nok ? 0 : -EHOSTUNREACH;
	goto out;
nomem:
	rc = -ENOMEM;
	snprintf(err, errlen, "out of memory");
out:
	for (i = 0; xs && i < nx; i++) {
		if (xs[i].h) {
			if (m)
				curl_multi_remove_handle(m, xs[i].h);
			curl_easy_cleanup(xs[i].h);
		}
		strbuf_release(&xs[i].buf);
		free(xs[i].samples);
	}
	free(xs);
	if (m)
		curl_multi_cleanup(m);
	curl_slist_free_all(hdrs);
	free(auth);
	out->elapsed_ns = cw_monotonic_ns() - start;
	return rc;
}

/* Per-node status and skew as JSON: [{"addr","node","ok","status",
 * "elapsed_ms","skew":{"offset_ns","rtt_ns","samples"}|null}]. */
static json_t *cw_fleet_nodes_json(const struct cw_fleet_result *r)
{
	json_t *a = json_array();

	for (int i = 0; i < r->n; i++) {
		const struct cw_fleet_node *n = &r->nodes[i];
		json_t *sk = n->skew.valid ? json_pack("{s:I, s:I, s:i}", "offset_ns",
						       (json_int_t)n->skew.offset_ns, "rtt_ns",
						       (json_int_t)n->skew.rtt_ns, "samples",
						       n->skew.samples)
					   : json_null();

		json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:i, s:f, s:o}", "addr",
						   n->addr, "node", n->name, "ok", n->ok, "status",
						   (int)n->http_status, "elapsed_ms",
						   (double)n->elapsed_ns / 1e6, "skew", sk));
	}
	return a;
}

static json_t *warnings_json(const struct cw_fleet_result *r)
{
	json_t *a = json_array();

	for (int i = 0; i < r->nwarnings; i++)
		json_array_append_new(a, cw_json_str(r->warnings[i]));
	return a;
}

/* Drops a node whose answer turned out not to have the expected shape. */
/* 1 when every element of the array a has type t. */
static int all_of_type(json_t *a, json_type t)
{
	size_t k;
	json_t *v;

	json_array_foreach(a, k, v)
		if (json_typeof(v) != t)
			return 0;
	return 1;
}

static void reject(struct cw_fleet_result *r, int i, const char *why)
{
	warn(r, "node \"%s\": malformed answer (%s), ignored", r->nodes[i].addr, why);
	json_decref(r->nodes[i].body);
	r->nodes[i].body = NULL;
	r->nodes[i].ok = 0;
	r->nok--;
}

int cw_fleet_query_req(const struct cw_fleet_opts *o, json_t *req, json_t **merged,
		       struct cw_fleet_result *out, char *err, size_t errlen)
{
	json_t *cols = NULL, *rows;
	char *body;
	int rc, i;

	*merged = NULL;
	body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	if (!body && (req || !o->posts)) {
		memset(out, 0, sizeof(*out));
		return -ENOMEM;
	}
	rc = cw_fleet_fetch(o, "/api/v1/query", body, out, err, errlen);
	free(body);
	if (rc && rc != -EHOSTUNREACH)
		return rc;
	rows = json_array();
	for (i = 0; i < out->n; i++) {
		json_t *c, *rr, *row;
		size_t k, ri;

		if (!out->nodes[i].ok)
			continue;
		c = json_object_get(out->nodes[i].body, "columns");
		rr = json_object_get(out->nodes[i].body, "rows");
		if (!json_is_array(c) || !json_is_array(rr)) {
			reject(out, i, "no columns/rows");
			continue;
		}
		if (!all_of_type(c, JSON_STRING)) {
			reject(out, i, "column names must be strings");
			continue;
		}
		json_array_foreach(rr, ri, row) if (!json_is_array(row) ||
						    json_array_size(row) != json_array_size(c)) break;
		if (ri != json_array_size(rr)) {
			reject(out, i, "row width differs from the columns");
			continue;
		}
		if (!cols) {
			cols = json_array();
			json_array_append_new(cols, json_string("node"));
			json_array_extend(cols, c);
		} else {
			int same = json_array_size(cols) == json_array_size(c) + 1;

			for (k = 0; same && k < json_array_size(c); k++)
				same = json_equal(json_array_get(cols, k + 1), json_array_get(c, k));
			if (!same) {
				warn(out,
				     "node \"%s\": its columns differ from the other nodes', left out",
				     out->nodes[i].name);
				continue;
			}
		}
		/* One node string shared by its rows (a page is 10,000 rows). */
		json_t *name = cw_json_str(out->nodes[i].name);
		json_array_foreach(rr, ri, row) {
			json_t *nr = json_array();

			json_array_append(nr, name);
			json_array_extend(nr, row);
			json_array_append_new(rows, nr);
		}
		json_decref(name);
		if (json_is_true(json_object_get(out->nodes[i].body, "truncated")))
			warn(out, "node \"%s\": rows truncated at its row cap", out->nodes[i].name);
	}
	*merged = json_pack("{s:o, s:o, s:o, s:o}", "columns", cols ? cols : json_array(), "rows",
			    rows, "warnings", warnings_json(out), "nodes", cw_fleet_nodes_json(out));
	return out->nok ? 0 : -EHOSTUNREACH;
}

static int sev_rank(json_t *c)
{
	const char *s = json_string_value(json_object_get(c, "severity"));

	if (!s)
		return 3;
	return !strcasecmp(s, "high") ? 0 : !strcasecmp(s, "medium") ? 1 : !strcasecmp(s, "low") ? 2 : 3;
}

static int cmp_chain(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t ex, ey;
	int d = sev_rank(x) - sev_rank(y);

	if (d)
		return d;
	ex = json_integer_value(json_object_get(x, "explained_ns"));
	ey = json_integer_value(json_object_get(y, "explained_ns"));
	if (ex != ey)
		return ex > ey ? -1 : 1;
	return strcmp(json_string_value(json_object_get(x, "agent")) ?: "",
		      json_string_value(json_object_get(y, "agent")) ?: "");
}

/* Timelines from several nodes are only comparable on one clock: every
 * agent time becomes this host's time, and the chain says by how much. */
static void shift_timeline(json_t *c, int64_t offset)
{
	json_t *e;
	size_t k;

	json_array_foreach(json_object_get(c, "timeline"), k, e) {
		json_t *t = json_object_get(e, "t_ns");

		if (json_is_integer(t))
			json_object_set_new(e, "t_ns", json_integer(json_integer_value(t) - offset));
	}
	json_object_set_new(c, "clock_offset_ns", json_integer(offset));
}

int cw_fleet_chains(const struct cw_fleet_opts *o, const char *query, json_t **merged,
		    struct cw_fleet_result *out, char *err, size_t errlen)
{
	json_t **all = NULL, *arr;
	size_t nall = 0, k;
	char path[1024];
	int rc, i;

	*merged = NULL;
	snprintf(path, sizeof(path), "/api/v1/chains%s%s", query && *query ? "?" : "",
		 query ? query : "");
	rc = cw_fleet_fetch(o, path, NULL, out, err, errlen);
	if (rc && rc != -EHOSTUNREACH)
		return rc;
	for (i = 0; i < out->n; i++) {
		json_t *ch, *c, *w;

		if (!out->nodes[i].ok)
			continue;
		ch = json_object_get(out->nodes[i].body, "chains");
		if (!json_is_array(ch)) {
			reject(out, i, "no chains array");
			continue;
		}
		if (!all_of_type(ch, JSON_OBJECT)) {
			reject(out, i, "chains must be objects");
			continue;
		}
		json_array_foreach(json_object_get(out->nodes[i].body, "warnings"), k, w)
			if (json_is_string(w))
				warn(out, "node \"%s\": %s", out->nodes[i].name, json_string_value(w));
		json_array_foreach(ch, k, c) {
			json_t **na = realloc(all, sizeof(*all) * (nall + 1));
			const char *nn = json_string_value(json_object_get(c, "node"));

			if (!na)
				break;
			all = na;
			json_object_set_new(c, "agent", cw_json_str(out->nodes[i].addr));
			if (out->nodes[i].skew.valid)
				shift_timeline(c, out->nodes[i].skew.offset_ns);
			if (!nn || !*nn)
				json_object_set_new(c, "node", cw_json_str(out->nodes[i].name));
			all[nall++] = json_incref(c);
		}
	}
	if (nall)
		qsort(all, nall, sizeof(*all), cmp_chain);
	arr = json_array();
	for (k = 0; k < nall; k++)
		json_array_append_new(arr, all[k]);
	free(all);
	*merged = json_pack("{s:o, s:o, s:o, s:b}", "chains", arr, "warnings", warnings_json(out),
			    "nodes", cw_fleet_nodes_json(out), "clock_offsets_applied",
			    out->skew_applied);
	return out->nok ? 0 : -EHOSTUNREACH;
}

void cw_fleet_result_free(struct cw_fleet_result *r)
{
	int i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++) {
		free(r->nodes[i].addr);
		free(r->nodes[i].name);
		json_decref(r->nodes[i].body);
	}
	free(r->nodes);
	for (i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	memset(r, 0, sizeof(*r));
}
