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
/* Says whether the store can take rows now (1) or not (0: another
 * process holds its write lock); called with the lock held before
 * records go to the pipeline. */
typedef int (*cw_consumer_gate)(void *ctx);

struct cw_consumer {
	struct cw_pipeline *pipe;
	struct ring_buffer *rb;
	pthread_mutex_t lock;
	int lock_waiters; /* threads in cw_consumer_lock: the ring reader hands the lock over */
	int in_round;        /* the reader thread's ring_buffer__consume, which a waiter may cut short */
	uint64_t round_from; /* records when that round began */
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
	/* While the gate is closed the rings keep draining: records wait in
	 * the spool, raw and in order, and go through the pipeline once the
	 * gate opens, so a store locked by another process neither loses them
	 * nor stalls the traced threads. Beyond spool_cap bytes they are
	 * counted in spool_dropped. */
	cw_consumer_gate gate;
	void *gate_ctx;
	size_t spool_cap;           /* 0 = 256 MiB */
	int held;                   /* the gate is closed */
	uint64_t held_since_ns;     /* when it closed (0 when open) */
	uint64_t held_ns_total;     /* time spent closed, all periods */
	uint64_t gate_tried_ns;
	unsigned char *spool;
	size_t spool_head, spool_len, spool_alloc;
	uint64_t spooled, spool_dropped, spool_replayed;
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
/* Lock held: 1 when the store takes rows now (the gate is open and the
 * spool written out), trying the gate again when it was closed. */
int cw_consumer_store_ready(struct cw_consumer *c);
/* Lock held: records still in the spool. */
uint64_t cw_consumer_spool_records(const struct cw_consumer *c);
/* Lock held: gives up what the spool holds (counted as dropped). */
void cw_consumer_spool_discard(struct cw_consumer *c);

#endif
