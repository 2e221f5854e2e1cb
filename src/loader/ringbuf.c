/* ringbuf: consumer thread, BPF rings -> cw_pipeline_feed. */
#include "loader/ringbuf.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "util/timeutil.h"

void cw_consumer_init(struct cw_consumer *c, struct cw_pipeline *pipe)
{
	memset(c, 0, sizeof(*c));
	c->pipe = pipe;
	c->flush_ms = 200;
	/* A call open for a minute belongs to a thread that died mid-call
	 * (or a hung sync, which is stored with the time it had so far). */
	c->max_open_ns = 60ull * 1000000000ull;
	pthread_mutex_init(&c->lock, NULL);
}

int cw_consumer_sample(void *ctx, void *data, size_t size)
{
	struct cw_consumer *c = ctx;

	c->records++;
	if (c->tap)
		c->tap(c->tap_ctx, data, size);
	if (cw_pipeline_feed(c->pipe, data, size))
		c->rejected++;
	return 0;
}

void cw_consumer_lock(struct cw_consumer *c)
{
	pthread_mutex_lock(&c->lock);
}

void cw_consumer_unlock(struct cw_consumer *c)
{
	pthread_mutex_unlock(&c->lock);
}

int cw_consumer_feed(struct cw_consumer *c, const void *data, size_t size)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = cw_consumer_sample(c, (void *)data, size);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void flush_locked(struct cw_consumer *c)
{
	int rc = cw_pipeline_flush(c->pipe, cw_monotonic_ns(), c->max_open_ns);

	if (rc)
		c->last_error = rc;
}

static void *run(void *arg)
{
	struct cw_consumer *c = arg;
	int efd = ring_buffer__epoll_fd(c->rb);
	uint64_t last_flush = cw_monotonic_ns(), flush_ns = (uint64_t)(c->flush_ms ? c->flush_ms : 200) * 1000000ull;

	while (!c->stop) {
		struct epoll_event ev[8];
		uint64_t now;

		/* Wake at least every 50 ms so the flush cadence holds when idle. */
		epoll_wait(efd, ev, 8, 50);
		pthread_mutex_lock(&c->lock);
		ring_buffer__consume(c->rb);
		now = cw_monotonic_ns();
		if (now - last_flush >= flush_ns) {
			flush_locked(c);
			last_flush = now;
		}
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

int cw_consumer_start(struct cw_consumer *c, struct ring_buffer *rb)
{
	int rc;

	c->rb = rb;
	c->stop = 0;
	rc = pthread_create(&c->thread, NULL, run, c);
	if (rc)
		return -rc;
	c->running = 1;
	return 0;
}

int cw_consumer_stop(struct cw_consumer *c)
{
	if (c->running) {
		c->stop = 1;
		pthread_join(c->thread, NULL);
		c->running = 0;
	}
	pthread_mutex_lock(&c->lock);
	if (c->rb)
		ring_buffer__consume(c->rb);
	flush_locked(c);
	pthread_mutex_unlock(&c->lock);
	return c->last_error;
}
