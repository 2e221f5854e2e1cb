/* trace/engine_scrape.c: the engines' own /metrics (engine_scrape.h).
 * One thread, one curl handle (its connection kept between scrapes, so
 * an engine sees one client, not a new connection a second). */
#include "trace/engine_scrape.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "inference/prom_parse.h"
#include "loader/ringbuf.h"
#include "pipeline/pipeline.h"
#include "store/writer.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

/* A server that does not answer (busy past the timeout, not listening
 * yet) is asked again after 1, 2, 4 ... s, at most this long. */
#define BACKOFF_MAX_NS (30 * NSEC_PER_SEC)

struct target {
	int used, given_up;
	uint32_t pid;
	uint16_t port;
	const struct cw_engine *e;
	unsigned useless, unanswered; /* in a row */
	uint64_t next_ns;
	uint64_t gen; /* a slot reused while its scrape ran is another target */
};

struct trace_engine_scrape {
	struct cw_consumer *cons;
	struct cw_writer *w;
	CURL *h;
	pthread_mutex_t mu; /* targets, stats, stop */
	pthread_cond_t cond;
	struct target t[CW_SCRAPE_MAX_TARGETS];
	uint64_t gen;
	struct trace_engine_scrape_stats st;
	pthread_t thread;
	int running, stop;
};

enum outcome { SCRAPE_OK, SCRAPE_USELESS, SCRAPE_UNANSWERED };

int trace_engine_figures(const struct cw_engine *e, const char *buf, size_t len, double v[CW_EF_N], int have[CW_EF_N])
{
	struct cw_prom_want want[CW_EF_N * 3];
	size_t nw = 0;
	int n = 0;

	for (int f = 0; f < CW_EF_N; f++) {
		v[f] = 0;
		have[f] = 0;
		for (int i = 0; i < 3 && e->figures[f][i]; i++)
			want[nw++] = (struct cw_prom_want){ .name = e->figures[f][i] };
	}
	if (!nw || cw_prom_sum(buf, len, want, nw) <= 0)
		return 0;
	nw = 0;
	for (int f = 0; f < CW_EF_N; f++) {
		const struct cw_prom_want *hit = NULL;

		for (int i = 0; i < 3 && e->figures[f][i]; i++, nw++)
			if (!hit && want[nw].samples)
				hit = &want[nw]; /* the newest name the engine has */
		if (!hit || isnan(hit->sum))
			continue;
		v[f] = hit->sum;
		if (f == CW_EF_KV_CACHE_USAGE)
			v[f] /= (double)hit->samples;
		if (e->scale[f] != 0)
			v[f] *= e->scale[f];
		have[f] = 1;
		n++;
	}
	return n;
}

static size_t on_data(char *p, size_t sz, size_t nm, void *arg)
{
	/* Less than given aborts the transfer: the cap holds as bytes
	 * arrive, whatever Content-Length said. */
	return strbuf_add(arg, p, sz * nm) ? 0 : sz * nm;
}

/* Before each request goes out (libcurl >= 7.80): the connection's local
 * port, so the server's side of it is known as ours and its requests are
 * not stored as the server's traffic (pipeline/http_track.h). */
static int on_prereq(void *ctx, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
	struct trace_engine_scrape *s = ctx;

	(void)primary_ip, (void)local_ip, (void)primary_port;
	if (local_port > 0 && local_port <= 65535) {
		cw_consumer_lock(s->cons);
		(void)cw_pipeline_http_own_client(s->cons->pipe, (uint16_t)local_port);
		cw_consumer_unlock(s->cons);
	}
	return CURL_PREREQFUNC_OK;
}

static void store(struct trace_engine_scrape *s, const struct target *tg, const double v[CW_EF_N],
		  const int have[CW_EF_N])
{
	uint64_t stored = 0, busy = 0, now = cw_realtime_ns();

	cw_consumer_lock(s->cons);
	for (int f = 0; f < CW_EF_N; f++) {
		struct cw_engine_metric_row r = {
			.pid = tg->pid,
			.port = tg->port,
			.engine = tg->e->name,
			.name = cw_engine_figure_name((enum cw_engine_figure)f),
			.value = v[f],
			.wall_ns = now,
		};

		if (!have[f])
			continue;
		/* While another process holds the database a row would only
		 * fail; the next second brings a newer one. */
		if (!cw_consumer_store_ready(s->cons))
			busy++;
		else if (!cw_writer_engine_metric(s->w, &r))
			stored++;
	}
	cw_consumer_unlock(s->cons);
	pthread_mutex_lock(&s->mu);
	s->st.figures += stored;
	s->st.store_busy += busy;
	pthread_mutex_unlock(&s->mu);
}

static enum outcome scrape(struct trace_engine_scrape *s, const struct target *tg)
{
	char url[128];
	struct strbuf sb;
	long status = 0;
	double v[CW_EF_N];
	int have[CW_EF_N];
	enum outcome o = SCRAPE_USELESS;
	CURLcode cc;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", tg->port, tg->e->metrics_path);
	strbuf_init(&sb, CW_SCRAPE_MAX_BODY);
	curl_easy_setopt(s->h, CURLOPT_URL, url);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, &sb);
	cc = curl_easy_perform(s->h);
	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT)
		o = SCRAPE_UNANSWERED;
	else if (cc == CURLE_OK && status == 200 && !sb.overflow &&
		 trace_engine_figures(tg->e, sb.buf, sb.len, v, have) > 0) {
		store(s, tg, v, have);
		o = SCRAPE_OK;
	}
	strbuf_release(&sb);
	return o;
}

/* After a scrape of slot i (still the target it was when gen matches). */
static void settle(struct trace_engine_scrape *s, size_t i, uint64_t gen, enum outcome o, uint64_t now)
{
	struct target *tg = &s->t[i];

	if (o == SCRAPE_OK)
		s->st.ok++;
	else
		s->st.failed++;
	if (!tg->used || tg->gen != gen)
		return;
	tg->next_ns = now + NSEC_PER_SEC;
	if (o == SCRAPE_OK) {
		tg->useless = tg->unanswered = 0;
	} else if (o == SCRAPE_USELESS) {
		tg->unanswered = 0;
		if (++tg->useless >= CW_SCRAPE_GIVE_UP) {
			tg->given_up = 1;
			s->st.given_up++;
		}
	} else {
		uint64_t wait = NSEC_PER_SEC << (tg->unanswered < 5 ? tg->unanswered : 5);

		tg->unanswered++;
		tg->next_ns = now + (wait < BACKOFF_MAX_NS ? wait : BACKOFF_MAX_NS);
	}
}

static void *scraper(void *arg)
{
	struct trace_engine_scrape *s = arg;

	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		struct timespec ts;
		uint64_t now = cw_monotonic_ns();

		clock_gettime(CLOCK_MONOTONIC, &ts); /* a round a second, whatever the scrapes took */

		for (size_t i = 0; i < CW_SCRAPE_MAX_TARGETS && !s->stop; i++) {
			struct target tg = s->t[i];
			enum outcome o;

			if (!tg.used || tg.given_up || tg.next_ns > now)
				continue;
			pthread_mutex_unlock(&s->mu);
			o = scrape(s, &tg);
			pthread_mutex_lock(&s->mu);
			settle(s, i, tg.gen, o, now);
		}
		ts.tv_sec += 1;
		if (!s->stop)
			pthread_cond_timedwait(&s->cond, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int trace_engine_scrape_start(struct trace_engine_scrape **out, struct cw_consumer *cons, struct cw_writer *w)
{
	struct trace_engine_scrape *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->cons = cons;
	s->w = w;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!(s->h = curl_easy_init())) {
		free(s);
		return -ENOMEM;
	}
	curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(s->h, CURLOPT_FOLLOWLOCATION, 0L);
	/* "" is no proxy, whatever http_proxy and no_proxy say: the engine
	 * is on this host's loopback. */
	curl_easy_setopt(s->h, CURLOPT_PROXY, "");
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(s->h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CW_SCRAPE_MAX_BODY);
	curl_easy_setopt(s->h, CURLOPT_CONNECTTIMEOUT_MS, CW_SCRAPE_CONNECT_MS);
	curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, CW_SCRAPE_TOTAL_MS);
	curl_easy_setopt(s->h, CURLOPT_USERAGENT, "causeway-trace");
	curl_easy_setopt(s->h, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(s->h, CURLOPT_PREREQDATA, s);
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = pthread_create(&s->thread, NULL, scraper, s))) {
		trace_engine_scrape_free(s);
		return -rc;
	}
	s->running = 1;
	*out = s;
	return 0;
}

/* Whether pid is in this process's network namespace (1 when it cannot
 * be told: then asking is what says). */
static int same_netns(uint32_t pid)
{
	char p[48];
	struct stat a, b;

	snprintf(p, sizeof(p), "/proc/%u/ns/net", pid);
	if (stat(p, &a) || stat("/proc/self/ns/net", &b))
		return 1;
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

void trace_engine_scrape_add(struct trace_engine_scrape *s, uint32_t pid, uint16_t port, const struct cw_engine *e)
{
	struct target *free_slot = NULL;
	int other;

	if (!s || !e || !e->metrics_path || e->metrics_path[0] != '/')
		return;
	other = !same_netns(pid);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < CW_SCRAPE_MAX_TARGETS; i++) {
		if (s->t[i].used && s->t[i].port == port)
			goto out; /* 127.0.0.1:port is one endpoint, whoever else holds the socket */
		if (!s->t[i].used && !free_slot)
			free_slot = &s->t[i];
	}
	if (other) {
		s->st.other_netns++;
	} else if (!free_slot) {
		s->st.lost++;
	} else {
		*free_slot = (struct target){ .used = 1, .pid = pid, .port = port, .e = e, .gen = ++s->gen };
		s->st.targets++;
		pthread_cond_signal(&s->cond); /* asked now, not within a second */
	}
out:
	pthread_mutex_unlock(&s->mu);
}

void trace_engine_scrape_forget(struct trace_engine_scrape *s, uint32_t pid)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < CW_SCRAPE_MAX_TARGETS; i++)
		if (s->t[i].used && s->t[i].pid == pid)
			s->t[i].used = 0;
	pthread_mutex_unlock(&s->mu);
}

void trace_engine_scrape_stop(struct trace_engine_scrape *s)
{
	if (!s || !s->running)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	s->running = 0;
}

void trace_engine_scrape_free(struct trace_engine_scrape *s)
{
	if (!s)
		return;
	trace_engine_scrape_stop(s);
	curl_easy_cleanup(s->h);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
	curl_global_cleanup();
	free(s);
}

void trace_engine_scrape_get_stats(struct trace_engine_scrape *s, struct trace_engine_scrape_stats *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->st;
	pthread_mutex_unlock(&s->mu);
}

void trace_engine_scrape_counters(struct trace_engine_scrape *s, struct cw_writer *w)
{
	struct trace_engine_scrape_stats st;

	if (!s)
		return;
	trace_engine_scrape_get_stats(s, &st);
	cw_writer_counter_set(w, "trace.engine_scrape.targets", st.targets);
	cw_writer_counter_set(w, "trace.engine_scrape.ok", st.ok);
	cw_writer_counter_set(w, "trace.engine_scrape.failed", st.failed);
	cw_writer_counter_set(w, "trace.engine_scrape.figures", st.figures);
	cw_writer_counter_set(w, "trace.engine_scrape.given_up", st.given_up);
	cw_writer_counter_set(w, "trace.engine_scrape.other_netns", st.other_netns);
	cw_writer_counter_set(w, "trace.engine_scrape.lost", st.lost);
	cw_writer_counter_set(w, "trace.engine_scrape.store_busy", st.store_busy);
}
