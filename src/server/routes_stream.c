/* /api/v1/stream: server-sent events while trace --serve writes the
 * database (docs/api.md): once a second {"type": "tick", "events": N,
 * "chains": N|null}, so a page knows when to poll /overview and /chains
 * again without polling blindly. Each stream holds one of the server's
 * connection threads (and a per-client slot), so it ends after
 * STREAM_MAX_TICKS ticks; the page reconnects (EventSource does so by
 * itself). It also ends when the server stops. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "store/store.h"
#include "util/timeutil.h"

#define STREAM_MAX_TICKS 600
#define STREAM_STEP_NS (100 * NSEC_PER_MSEC)

struct stream {
	struct cw_server *s;
	int ticks;
	uint64_t next_ns; /* monotonic time of the next tick */
};

/* The newest event's rowid: rows are numbered as they are stored, so it
 * is the number of events stored so far (less any pruned), read with one
 * seek instead of a count. */
static long long events_now(struct cw_server *s)
{
	uint64_t deadline;
	int64_t lo, hi;
	char err[256];
	sqlite3 *db;
	long long n = -1;

	if (cw_server_open_db(s, &db, &deadline, err, sizeof(err)))
		return -1;
	if (!cw_events_id_bounds(db, &lo, &hi))
		n = hi;
	cw_server_close_db(db);
	return n;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *x = cls;
	long long ev;
	int chains, n;

	(void)pos;
	for (;;) {
		uint64_t now = cw_monotonic_ns();

		if (atomic_load(&x->s->stopping) || x->ticks >= STREAM_MAX_TICKS)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (now >= x->next_ns)
			break;
		{
			uint64_t d = x->next_ns - now < STREAM_STEP_NS ? x->next_ns - now : STREAM_STEP_NS;
			struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)d };

			nanosleep(&ts, NULL);
		}
	}
	x->ticks++;
	x->next_ns = cw_monotonic_ns() + NSEC_PER_SEC;
	ev = events_now(x->s);
	chains = cw_chains_cached_count(x->s);
	n = snprintf(buf, max, "data: {\"type\":\"tick\",\"events\":%lld,\"chains\":", ev < 0 ? 0 : ev);
	if (n > 0 && (size_t)n < max)
		n += snprintf(buf + n, max - (size_t)n, chains < 0 ? "null}\n\n" : "%d}\n\n", chains);
	if (n <= 0 || (size_t)n >= max)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

void cw_route_stream(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct stream *x;

	if (!atomic_load(&s->live)) {
		cw_reply_error(r, 404, "no live trace: the stream is served by trace --serve");
		return;
	}
	if (!(x = calloc(1, sizeof(*x)))) {
		cw_reply_error(r, 500, "out of memory");
		return;
	}
	x->s = s;
	r->status = 200;
	r->ctype = "text/event-stream";
	r->stream = stream_read;
	r->stream_cls = x;
	r->stream_free = free;
}
