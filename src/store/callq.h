/* A bounded single-producer, single-consumer queue of fixed-size items
 * between the decode thread and the store's writer thread. A full queue
 * blocks the producer (back-pressure) instead of dropping: every wait is
 * counted, with the time it took, so a writer that cannot keep up shows
 * as a counter (store.backpressure_waits, store.backpressure_ns) and, when
 * it lasts, as ring-buffer drops upstream (counted there), never as a
 * silent loss here. */
#ifndef CW_STORE_CALLQ_H
#define CW_STORE_CALLQ_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct cw_callq {
	unsigned char *buf;
	size_t item, cap, head, len;
	pthread_mutex_t mu;
	pthread_cond_t nonfull, nonempty, idle;
	int closed;   /* no more items will come */
	int draining; /* the producer waits for everything to be taken */
	int busy;     /* the consumer works on items it took */
	int waiting;  /* the consumer sleeps on nonempty ... */
	size_t want;  /* ... until this many items wait */
	int full_wait; /* the producer sleeps on nonfull until half empty */
	uint64_t waits, wait_ns, pushed;
};

int cw_callq_init(struct cw_callq *q, size_t item_size, size_t cap);
void cw_callq_destroy(struct cw_callq *q);
/* Appends one item, waiting while the queue is full (counted). Returns 0,
 * or -EPIPE once closed. */
int cw_callq_push(struct cw_callq *q, const void *item);
/* Consumer: takes up to max items into out once at least min wait (fewer
 * when draining or closed). Returns the count; 0 means closed and empty.
 * The consumer is busy until cw_callq_done(). */
size_t cw_callq_pop(struct cw_callq *q, void *out, size_t max, size_t min);
void cw_callq_done(struct cw_callq *q);
/* Producer: returns once every item pushed so far has been taken and the
 * consumer is done with it. */
void cw_callq_drain(struct cw_callq *q);
/* 1 when nothing is queued and the consumer works on nothing. */
int cw_callq_idle(struct cw_callq *q);
void cw_callq_close(struct cw_callq *q);
void cw_callq_stats(struct cw_callq *q, uint64_t *waits, uint64_t *wait_ns);

#endif
