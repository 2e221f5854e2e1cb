/* NCCL RAS while tracing (ras.h). */
#define _GNU_SOURCE
#include "trace/ras.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/nccl_ras.h"
#include "trace/nccl_live.h"
#include "util/timeutil.h"

struct trace_ras {
	struct trace_ras_opts o;
	struct cw_writer *w;
	struct cw_nccl_live live;
	pthread_t th;
	int started;        /* the query thread was started (once per trace) */
	atomic_int done;    /* it has finished: st and qerr are set */
	int stored, joined;
	int qerr;           /* cw_ras_query's return */
	char why[256];      /* the live detector's line */
	uint64_t asked_wall;
	struct cw_ras_status st;
	uint64_t write_errors;
};

int trace_ras_parse_addr(const char *s, struct trace_ras_opts *o)
{
	const char *colon;
	char *end;
	long port;

	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "off")) {
		o->off = 1;
		return 0;
	}
	colon = strrchr(s, ':');
	errno = 0;
	port = strtol(colon ? colon + 1 : s, &end, 10);
	if (errno || *end || end == (colon ? colon + 1 : s) || port < 1 || port > 65535)
		return -EINVAL;
	o->port = (int)port;
	o->host[0] = '\0';
	if (colon) {
		size_t n = (size_t)(colon - s);

		/* "[::1]:28028" */
		if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
			s++;
			n -= 2;
		}
		if (!n || n >= sizeof(o->host))
			return -EINVAL;
		memcpy(o->host, s, n);
		o->host[n] = '\0';
	}
	return 0;
}

static void *query(void *arg)
{
	struct trace_ras *r = arg;
	struct cw_ras_opts qo = {
		.host = r->o.host[0] ? r->o.host : NULL, .port = r->o.port, .timeout_ms = r->o.timeout_ms ? r->o.timeout_ms : 6000,
	};

	r->qerr = cw_ras_query(&qo, &r->st);
	atomic_store(&r->done, 1);
	return NULL;
}

int trace_ras_start(struct trace_ras **out, const struct trace_ras_opts *o, struct cw_writer *w)
{
	struct trace_ras *r;

	*out = NULL;
	if (o->off)
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->w = w;
	*out = r;
	return 0;
}

void trace_ras_observe(struct trace_ras *r, const struct cw_event_row *row)
{
	if (r && !r->started)
		cw_nccl_live_observe(&r->live, row);
}

static void store(struct trace_ras *r)
{
	json_t *d;
	char *detail;

	if (r->stored)
		return;
	r->stored = 1;
	if (r->qerr < 0) {
		memset(&r->st, 0, sizeof(r->st));
		r->st.state = CW_RAS_NO_ANSWER;
		snprintf(r->st.why, sizeof(r->st.why), "query failed: %s", strerror(-r->qerr));
	}
	d = cw_ras_status_json(&r->st);
	if (!d)
		return;
	json_object_set_new(d, "asked_wall_ns", json_integer((json_int_t)r->asked_wall));
	json_object_set_new(d, "suspected", json_string(r->why));
	detail = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	if (detail) {
		struct cw_event_row row = {
			.mono_ns = cw_monotonic_ns(), .wall_ns = cw_realtime_ns(), .source = "ras", .op = "status",
			.detail = detail, .device = -1,
		};
		if (cw_writer_event(r->w, &row))
			r->write_errors++;
	}
	free(detail);
}

void trace_ras_tick(struct trace_ras *r)
{
	if (!r)
		return;
	if (!r->started) {
		if (!cw_nccl_live_hang(&r->live, cw_realtime_ns(), r->o.hang_after_ns, r->why, sizeof(r->why)))
			return;
		r->asked_wall = cw_realtime_ns();
		if (pthread_create(&r->th, NULL, query, r)) {
			r->qerr = -EAGAIN;
			atomic_store(&r->done, 1);
			r->joined = 1;
		}
		r->started = 1;
		return;
	}
	if (atomic_load(&r->done) && !r->stored) {
		if (!r->joined) {
			pthread_join(r->th, NULL);
			r->joined = 1;
		}
		store(r);
	}
}

void trace_ras_finish(struct trace_ras *r)
{
	if (!r || !r->started || r->stored)
		return;
	if (!r->joined) {
		pthread_join(r->th, NULL);
		r->joined = 1;
	}
	store(r);
}

void trace_ras_counters(struct trace_ras *r)
{
	if (!r)
		return;
	cw_writer_counter_set(r->w, "trace.nccl_ras.asked", (uint64_t)r->started);
	cw_writer_counter_set(r->w, "trace.nccl_ras.stored", (uint64_t)r->stored);
	cw_writer_counter_set(r->w, "trace.nccl_ras.write_errors", r->write_errors);
}

void trace_ras_stop(struct trace_ras *r)
{
	if (!r)
		return;
	if (r->started && !r->joined)
		pthread_join(r->th, NULL);
	free(r);
}
