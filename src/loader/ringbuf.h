/* ringbuf: the consumer thread between the BPF ring buffers and the
 * pipeline.
 *
 * The pipeline is single-threaded, so the consumer owns it behind one
 * mutex: the thread takes it to drain the rings, to flush every
 * flush_ms, and other threads (the snapshot sampler, the clock update,
 * the live view) take it with cw_consumer_lock() for their own feeds.
 * Waiting for data happens without the lock held. */
#ifndef CW_LOADER_RINGBUF_H
#define CW_LOADER_RINGBUF_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "pipeline/pipeline.h"

/* Sees every raw record before the pipeline does (live view, pid
 * discovery); called with the lock held. */
typedef void (*cw_consumer_tap)(void *ctx, const void *data, size_t size);

struct cw_consumer {
	struct cw_pipeline *pipe;
	struct ring_buffer *rb;
	pthread_mutex_t lock;
	pthread_t thread;
	int running;
	volatile int stop;
	unsigned flush_ms;          /* 0 = 200 */
	uint64_t max_open_ns;       /* entries older than this are closed at flush */
	cw_consumer_tap tap;
	void *tap_ctx;
	uint64_t records, rejected; /* fed, and refused by the pipeline */
	uint64_t names_unresolved;  /* kernel names neither the probe nor /proc could read */
	int last_error;             /* a pipeline flush error, 0 none */
};

void cw_consumer_init(struct cw_consumer *c, struct cw_pipeline *pipe);
/* The ring_buffer_sample_fn to register with every ring; ctx is the
 * consumer. */
int cw_consumer_sample(void *ctx, void *data, size_t size);
/* Starts the thread on rb (rings already added). */
int cw_consumer_start(struct cw_consumer *c, struct ring_buffer *rb);
/* Stops the thread, drains what is left in the rings and flushes. */
int cw_consumer_stop(struct cw_consumer *c);
void cw_consumer_lock(struct cw_consumer *c);
void cw_consumer_unlock(struct cw_consumer *c);
/* Feeds one record from another thread (snapshots); takes the lock. */
int cw_consumer_feed(struct cw_consumer *c, const void *data, size_t size);

#endif
