/* NCCL RAS while tracing (ras.h). */
#define _GNU_SOURCE
#include "trace/ras.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "gpu/nccl_ras.h"
#include "trace/nccl_live.h"
#include "trace/ras_source.h"
#include "util/timeutil.h"

struct trace_ras {
	struct trace_ras_opts o;
	struct cw_writer *w;
	struct cw_nccl_live live;
	pthread_t th;
	int cancel_fd;      /* an eventfd: written at stop, the query gives up at once */
	uint32_t pids[CW_NCCL_LIVE_MAX]; /* the job's rank processes, for the query thread */
	int npids;
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

static int verify(void *arg, int fd, char *why, size_t wlen)
{
	struct trace_ras *r = arg;

	return trace_ras_source_check(fd, r->pids, r->npids, NULL, why, wlen);
}

static void *query(void *arg)
{
	struct trace_ras *r = arg;
	char host[64];
	int port = r->o.port, enabled = 1;
	struct cw_ras_opts qo = {
		.timeout_ms = r->o.timeout_ms ? r->o.timeout_ms : 6000, .verify = verify, .verify_arg = r,
		.cancel_fd = r->cancel_fd,
	};

	snprintf(host, sizeof(host), "%s", r->o.host);
	/* Where the ranks say RAS listens, unless --nccl-ras said where. */
	for (int i = 0; i < r->npids && !port; i++)
		if (!trace_ras_source_env(r->pids[i], NULL, &enabled, host, sizeof(host), &port))
			break;
	if (!enabled) {
		memset(&r->st, 0, sizeof(r->st));
		r->st.state = CW_RAS_NO_ANSWER;
		snprintf(r->st.why, sizeof(r->st.why), "not asked: NCCL_RAS_ENABLE=0 in the job's environment");
	} else {
		qo.host = host[0] ? host : NULL;
		qo.port = port;
		r->qerr = cw_ras_query(&qo, &r->st);
	}
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
	r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->cancel_fd < 0) {
		free(r);
		return -errno;
	}
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
		for (int i = 0; i < r->live.n && i < CW_NCCL_LIVE_MAX; i++)
			r->pids[r->npids++] = r->live.r[i].pid;
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

void trace_ras_abandon(struct trace_ras *r)
{
	uint64_t one = 1;

	if (!r || !r->started || r->joined)
		return;
	if (!atomic_load(&r->done) && write(r->cancel_fd, &one, sizeof(one)) != sizeof(one))
		(void)0; /* an eventfd write fails only at its maximum: already woken */
	pthread_join(r->th, NULL);
	r->joined = 1;
}

void trace_ras_finish(struct trace_ras *r)
{
	if (!r || !r->started || r->stored || !r->joined)
		return;
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
	trace_ras_abandon(r);
	close(r->cancel_fd);
	free(r);
}
