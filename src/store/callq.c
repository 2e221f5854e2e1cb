#include "store/callq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/timeutil.h"

int cw_callq_init(struct cw_callq *q, size_t item_size, size_t cap)
{
	memset(q, 0, sizeof(*q));
	if (!item_size || !cap)
		return -EINVAL;
	q->buf = calloc(cap, item_size);
	if (!q->buf)
		return -ENOMEM;
	q->item = item_size;
	q->cap = cap;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->nonfull, NULL);
	pthread_cond_init(&q->nonempty, NULL);
	pthread_cond_init(&q->idle, NULL);
	return 0;
}

void cw_callq_destroy(struct cw_callq *q)
{
	if (!q->buf)
		return;
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->nonfull);
	pthread_cond_destroy(&q->nonempty);
	pthread_cond_destroy(&q->idle);
	free(q->buf);
	q->buf = NULL;
}

int cw_callq_push(struct cw_callq *q, const void *item)
{
	pthread_mutex_lock(&q->mu);
	if (q->len == q->cap && !q->closed) {
		uint64_t t0 = cw_monotonic_ns();

		q->waits++;
		/* The consumer may be waiting for a fuller batch. */
		pthread_cond_signal(&q->nonempty);
		/* Resume at half full, not at the first free slot: a wake-up
		 * per statement's worth of rows would make the two threads
		 * take turns instead of running side by side. */
		q->full_wait = 1;
		while (q->len > q->cap / 2 && !q->closed)
			pthread_cond_wait(&q->nonfull, &q->mu);
		q->full_wait = 0;
		q->wait_ns += cw_monotonic_ns() - t0;
	}
	if (q->closed) {
		pthread_mutex_unlock(&q->mu);
		return -EPIPE;
	}
	memcpy(q->buf + ((q->head + q->len) % q->cap) * q->item, item, q->item);
	q->len++;
	q->pushed++;
	/* Woken only once there is a batch for it (or a drain asks). */
	if (q->waiting && (q->len >= q->want || q->draining))
		pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

size_t cw_callq_pop(struct cw_callq *q, void *out, size_t max, size_t min)
{
	size_t n, i;

	pthread_mutex_lock(&q->mu);
	q->busy = 0;
	/* Fewer than min only for a drain; none only once closed. */
	while (!q->closed && (!q->len || (q->len < min && q->len < q->cap && !q->draining))) {
		if (!q->len)
			pthread_cond_broadcast(&q->idle);
		q->waiting = 1;
		q->want = min;
		pthread_cond_wait(&q->nonempty, &q->mu);
		q->waiting = 0;
	}
	n = q->len < max ? q->len : max;
	for (i = 0; i < n; i++)
		memcpy((unsigned char *)out + i * q->item, q->buf + ((q->head + i) % q->cap) * q->item, q->item);
	q->head = (q->head + n) % q->cap;
	q->len -= n;
	q->busy = n > 0;
	if (n && q->full_wait && q->len <= q->cap / 2)
		pthread_cond_signal(&q->nonfull);
	else if (!n)
		pthread_cond_broadcast(&q->idle);
	pthread_mutex_unlock(&q->mu);
	return n;
}

void cw_callq_done(struct cw_callq *q)
{
	pthread_mutex_lock(&q->mu);
	q->busy = 0;
	if (!q->len)
		pthread_cond_broadcast(&q->idle);
	pthread_mutex_unlock(&q->mu);
}

void cw_callq_drain(struct cw_callq *q)
{
	pthread_mutex_lock(&q->mu);
	q->draining++;
	pthread_cond_signal(&q->nonempty);
	while (q->len || q->busy) {
		pthread_cond_signal(&q->nonempty);
		pthread_cond_wait(&q->idle, &q->mu);
	}
	q->draining--;
	pthread_mutex_unlock(&q->mu);
}

int cw_callq_idle(struct cw_callq *q)
{
	int idle;

	pthread_mutex_lock(&q->mu);
	idle = !q->len && !q->busy;
	pthread_mutex_unlock(&q->mu);
	return idle;
}

void cw_callq_close(struct cw_callq *q)
{
	pthread_mutex_lock(&q->mu);
	q->closed = 1;
	pthread_cond_broadcast(&q->nonempty);
	pthread_cond_broadcast(&q->nonfull);
	pthread_mutex_unlock(&q->mu);
}

void cw_callq_stats(struct cw_callq *q, uint64_t *waits, uint64_t *wait_ns)
{
	pthread_mutex_lock(&q->mu);
	*waits = q->waits;
	*wait_ns = q->wait_ns;
	pthread_mutex_unlock(&q->mu);
}
