/* trace/inference.c: the servers of trace --inference (inference.h). */
#include "trace/inference.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inference/listeners.h"
#include "loader/http_probes.h"
#include "trace/engine_scrape.h"
#include "trace/session.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_LISTENERS 64
#define MAX_OPEN_CONNS 4096
/* Until a first server is found (for 30 s at most) listeners are looked
 * for every 200 ms, so a launched server is followed from its first
 * requests; then every 2 s: reading a namespace's TCP table walks every
 * socket of it, and was a quarter of trace's time on a busy server
 * (bench/inference.sh). */
#define FAST_SCAN_NS (200 * 1000000ull)
#define FAST_SCAN_FOR_NS (30 * NSEC_PER_SEC)
#define SLOW_SCAN_NS (2 * NSEC_PER_SEC)

struct trace_inference {
	struct trace *t;
	struct cw_http_probes *hp;
	struct trace_engine_scrape *scrape; /* the engines' own /metrics */
	uint16_t ports[CW_INFERENCE_MAX_PORTS];
	size_t nports; /* 0: auto */
	uint64_t started_ns, last_scan_ns;
	/* Listeners already registered, to say each once. */
	struct cw_listener known[MAX_LISTENERS];
	size_t nknown;
	uint64_t listeners_lost; /* beyond MAX_LISTENERS */
};

int trace_inference_spec_ok(const char *spec)
{
	uint16_t p[CW_INFERENCE_MAX_PORTS];

	return cw_inference_parse_ports(spec, p, CW_INFERENCE_MAX_PORTS) >= 0;
}

static int known_listener(const struct trace_inference *ti, const struct cw_listener *l)
{
	for (size_t i = 0; i < ti->nknown; i++)
		if (ti->known[i].pid == l->pid && ti->known[i].fd == l->fd && ti->known[i].port == l->port)
			return 1;
	return 0;
}

static void scan(struct trace_inference *ti)
{
	struct trace *t = ti->t;
	struct cw_listen_query q = { .ports = ti->ports, .nports = ti->nports };
	struct cw_listener found[MAX_LISTENERS];
	struct cw_listener_conn *conns = calloc(MAX_OPEN_CONNS, sizeof(*conns));
	size_t nconns = 0;
	int n;

	if (!conns)
		return;
	/* A server that exited is forgotten: its pid may come back as
	 * another process with a listener to say. */
	for (size_t i = 0; i < ti->nknown;)
		if (!cw_pid_exists(ti->known[i].pid)) {
			trace_engine_scrape_forget(ti->scrape, ti->known[i].pid);
			(void)cw_kernel_probes_mark_server(ti->t->kp, ti->known[i].pid, 0);
			ti->known[i] = ti->known[--ti->nknown];
		} else {
			i++;
		}
	n = cw_listeners_scan(&q, found, MAX_LISTENERS, conns, MAX_OPEN_CONNS, &nconns);
	for (int i = 0; i < n; i++) {
		const struct cw_listener *l = &found[i];

		if (known_listener(ti, l))
			continue;
		/* Tracked first, so the probes see the first call on the
		 * socket once it is registered. */
		cw_kernel_probes_track(t->kp, l->pid);
		if (cw_kernel_probes_mark_server(t->kp, l->pid, 1))
			cw_debug("cannot mark pid %u as a server: its short sleeps are recorded", l->pid);
		if (cw_http_probes_listen(ti->hp, l->pid, l->fd, l->port) < 0)
			continue;
		for (size_t c = 0; c < nconns; c++)
			if (conns[c].pid == l->pid && conns[c].port == l->port)
				(void)cw_http_probes_conn(ti->hp, conns[c].pid, conns[c].fd, conns[c].port);
		trace_engine_scrape_add(ti->scrape, l->pid, l->port, l->engine);
		cw_consumer_lock(&t->cons);
		trace_add_pending(t, l->pid);
		cw_consumer_unlock(&t->cons);
		if (ti->nknown < MAX_LISTENERS)
			ti->known[ti->nknown++] = *l;
		else
			ti->listeners_lost++;
		if (!t->o.json)
			cw_trace_say(&t->o.say, "causeway: following the requests of %s%s%s (pid %u) on port %u\n",
				     l->comm[0] ? l->comm : "a server", l->engine ? ", " : "",
				     l->engine ? l->engine->name : "", l->pid, l->port);
	}
	free(conns);
}

int trace_inference_start(struct trace_inference **out, struct trace *t, const char *spec, char *err,
			  size_t errlen)
{
	struct trace_inference *ti = calloc(1, sizeof(*ti));
	struct cw_http_probes_opts ho = {
		.ring_kb = t->o.ring_kb,
		.tracked_fd = cw_kernel_probes_tracked_fd(t->kp),
		.drops_fd = cw_kernel_probes_drops_fd(t->kp),
		.stats_fd = cw_kernel_probes_stats_fd(t->kp),
	};
	int n, rc;

	*out = NULL;
	if (!ti) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ti->t = t;
	n = cw_inference_parse_ports(spec, ti->ports, CW_INFERENCE_MAX_PORTS);
	if (n < 0) {
		snprintf(err, errlen, "bad --inference \"%s\"", spec);
		free(ti);
		return -EINVAL;
	}
	ti->nports = (size_t)n;
	if ((rc = cw_http_probes_open(&ti->hp, &ho, err, errlen))) {
		free(ti);
		return rc;
	}
	if ((rc = trace_engine_scrape_start(&ti->scrape, &t->cons, t->w))) {
		snprintf(err, errlen, "cannot start the engine metrics scraper");
		cw_http_probes_close(ti->hp);
		free(ti);
		return rc;
	}
	ti->started_ns = ti->last_scan_ns = cw_monotonic_ns();
	scan(ti);
	*out = ti;
	return 0;
}

int trace_inference_add_ring(struct trace_inference *ti, struct ring_buffer **rb, ring_buffer_sample_fn fn,
			     void *ctx)
{
	return cw_http_probes_add_ring(ti->hp, rb, fn, ctx);
}

void trace_inference_poll(struct trace_inference *ti, uint64_t now_ns)
{
	uint64_t every;

	if (!ti)
		return;
	every = !ti->nknown && now_ns - ti->started_ns < FAST_SCAN_FOR_NS ? FAST_SCAN_NS : SLOW_SCAN_NS;
	if (now_ns - ti->last_scan_ns < every)
		return;
	ti->last_scan_ns = now_ns;
	scan(ti);
}

void trace_inference_stop(struct trace_inference *ti)
{
	if (ti)
		trace_engine_scrape_stop(ti->scrape);
}

void trace_inference_counters(struct trace_inference *ti)
{
	if (ti)
		trace_engine_scrape_counters(ti->scrape, ti->t->w);
}

void trace_inference_free(struct trace_inference *ti)
{
	if (!ti)
		return;
	trace_engine_scrape_free(ti->scrape);
	cw_http_probes_close(ti->hp);
	free(ti);
}
