/* ringbuf: consumer thread, BPF rings -> cw_pipeline_feed. */
#define _GNU_SOURCE /* process_vm_readv */
#include "loader/ringbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <time.h>

#include "bpf/cuda.bpf.h"
#include "bpf/events.h"
#include "symbol/demangle.h"

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

/* Reads a kernel name the probe had to leave behind (CW_KNAME_DEFERRED_OFF)
 * from the process. Remote memory is hostile: bounded copy, forced NUL.
 * Returns 0 when k->name was filled. */
static int resolve_deferred_name(struct cw_kernel_name *k)
{
	uint64_t addr;
	struct iovec local = { k->name, sizeof(k->name) - 1 }, remote;

	memcpy(&addr, &k->name[CW_KNAME_DEFERRED_OFF], sizeof(addr));
	if (!addr)
		return -EINVAL;
	memset(k->name, 0, sizeof(k->name));
	remote.iov_base = (void *)(uintptr_t)addr;
	remote.iov_len = sizeof(k->name) - 1;
	/* A read across the end of a mapping fails as a whole: retry short. */
	if (process_vm_readv((pid_t)k->hdr.pid, &local, 1, &remote, 1, 0) <= 0) {
		size_t room = 4096 - (addr & 4095);

		if (room >= sizeof(k->name) - 1)
			return -EFAULT;
		local.iov_len = remote.iov_len = room;
		if (process_vm_readv((pid_t)k->hdr.pid, &local, 1, &remote, 1, 0) <= 0)
			return -EFAULT;
	}
	k->name[sizeof(k->name) - 1] = '\0';
	return k->name[0] ? 0 : -EINVAL;
}

#define SPOOL_CAP_DEFAULT (256u << 20)
/* How often a closed gate is tried, and how many spooled records go
 * through the pipeline per round once it opens (the rings are drained
 * between rounds, into the spool's tail, so order is kept). */
#define GATE_RETRY_NS (100ull * 1000000ull)
#define REPLAY_PER_ROUND 20000

struct spool_rec {
	uint32_t size;
	uint32_t pad;
};

static void spool_put(struct cw_consumer *c, const void *data, size_t size)
{
	size_t need = sizeof(struct spool_rec) + ((size + 7) & ~(size_t)7);
	size_t cap = c->spool_cap ? c->spool_cap : SPOOL_CAP_DEFAULT;
	struct spool_rec h = { (uint32_t)size, 0 };

	if (size > UINT32_MAX || c->spool_len - c->spool_head + need > cap) {
		c->spool_dropped++;
		return;
	}
	if (c->spool_len + need > c->spool_alloc) {
		size_t a = c->spool_alloc ? c->spool_alloc : 1u << 20;
		unsigned char *p;

		while (a < c->spool_len + need)
			a *= 2;
		p = realloc(c->spool, a);
		if (!p) {
			c->spool_dropped++;
			return;
		}
		c->spool = p;
		c->spool_alloc = a;
	}
	memcpy(c->spool + c->spool_len, &h, sizeof(h));
	memcpy(c->spool + c->spool_len + sizeof(h), data, size);
	c->spool_len += need;
	c->spooled++;
}

static void spool_reset(struct cw_consumer *c)
{
	c->spool_head = c->spool_len = 0;
	/* A long lock may have grown it to hundreds of MiB: give them back. */
	if (c->spool_alloc > (4u << 20)) {
		free(c->spool);
		c->spool = NULL;
		c->spool_alloc = 0;
	}
}

uint64_t cw_consumer_spool_records(const struct cw_consumer *c)
{
	return c->spooled - c->spool_replayed;
}

void cw_consumer_spool_discard(struct cw_consumer *c)
{
	c->spool_dropped += c->spooled - c->spool_replayed;
	c->spool_replayed = c->spooled;
	c->spool_head = c->spool_len = 0;
	free(c->spool);
	c->spool = NULL;
	c->spool_alloc = 0;
}

/* Feeds up to max spooled records to the pipeline. Returns 1 when the
 * spool is empty. */
static int spool_replay(struct cw_consumer *c, int max)
{
	int n = 0;

	while (c->spool_head < c->spool_len && n < max) {
		struct spool_rec h;

		memcpy(&h, c->spool + c->spool_head, sizeof(h));
		if (cw_pipeline_feed(c->pipe, c->spool + c->spool_head + sizeof(h), h.size))
			c->rejected++;
		c->spool_head += sizeof(h) + ((h.size + 7) & ~(size_t)7);
		c->spool_replayed++;
		n++;
	}
	if (c->spool_head < c->spool_len)
		return 0;
	spool_reset(c);
	return 1;
}

/* Lock held. Closes the gate when the store cannot take rows; while it
 * is closed, retries it every GATE_RETRY_NS. An open gate costs one call
 * (the writer's batch is open already), so it is asked per record. */
static int gate_check(struct cw_consumer *c)
{
	uint64_t now;

	if (!c->gate)
		return 1;
	if (!c->held) {
		if (c->gate(c->gate_ctx))
			return 1;
		c->held = 1;
		c->held_since_ns = c->gate_tried_ns = cw_monotonic_ns();
		return 0;
	}
	now = cw_monotonic_ns();
	if (now - c->gate_tried_ns < GATE_RETRY_NS)
		return 0;
	c->gate_tried_ns = now;
	if (!c->gate(c->gate_ctx))
		return 0;
	c->held = 0;
	c->held_ns_total += now - c->held_since_ns;
	c->held_since_ns = 0;
	return 1;
}

int cw_consumer_store_ready(struct cw_consumer *c)
{
	return gate_check(c) && c->spool_head == c->spool_len;
}

/* A round of the reader thread reads at least this many records before a
 * waiting thread cuts it short: ring_buffer__consume reads a ring until it
 * is empty, which under a flood is never, and the lock is held all along
 * (the main loop, and with it --duration and Ctrl-C, waited a minute). */
#define ROUND_MIN_RECORDS 4096
#define ROUND_CUT (-EAGAIN)

static int consume_one(struct cw_consumer *c, void *data, size_t size);

int cw_consumer_sample(void *ctx, void *data, size_t size)
{
	struct cw_consumer *c = ctx;
	int rc = consume_one(c, data, size);

	/* The record is consumed either way; a negative return stops libbpf
	 * after it (the ring's consumer position already passed it). */
	if (c->in_round && c->records - c->round_from >= ROUND_MIN_RECORDS &&
	    __atomic_load_n(&c->lock_waiters, __ATOMIC_SEQ_CST))
		return ROUND_CUT;
	return rc;
}

static int consume_one(struct cw_consumer *c, void *data, size_t size)
{
	struct cw_kernel_name kn;
	const struct cw_hdr *h = data;

	if (size == sizeof(kn) && h->type == CW_REC_KERNEL_NAME) {
		char dm[sizeof(kn.name)];

		/* The ring's pages are read-only here: fix up a copy. */
		memcpy(&kn, data, sizeof(kn));
		if (!kn.name[0] && resolve_deferred_name(&kn))
			c->names_unresolved++;
		/* Launches show "cwtest::scale_kernel<float>(float*, float, int)",
		 * not "_ZN6cwtest12scale_kernelIfEEvPT_S1_i" (truncated to the
		 * record's 127 characters). */
		kn.name[sizeof(kn.name) - 1] = '\0';
		if (kn.name[0] && cw_demangle(kn.name, dm, sizeof(dm)))
			memcpy(kn.name, dm, sizeof(dm));
		data = &kn;
	}

	c->records++;
	if (c->tap)
		c->tap(c->tap_ctx, data, size);
	/* Behind spooled records, or the store cannot take rows now. */
	if (c->held || c->spool_len || !gate_check(c)) {
		spool_put(c, data, size);
		return 0;
	}
	if (cw_pipeline_feed(c->pipe, data, size))
		c->rejected++;
	return 0;
}

/* Other threads (trace's main loop, the snapshot thread) count
 * themselves while they wait, so the reader hands the lock over under a
 * flood instead of taking it straight back: a mutex is not fair, and the
 * main loop starved for a minute was a --duration not kept. */
void cw_consumer_lock(struct cw_consumer *c)
{
	__atomic_add_fetch(&c->lock_waiters, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&c->lock);
	__atomic_sub_fetch(&c->lock_waiters, 1, __ATOMIC_SEQ_CST);
}

/* The reader, lock released: a waiter takes it first (for at most ~2 ms,
 * a waiter on a busy CPU may be slow to run). */
static void hand_over(struct cw_consumer *c)
{
	for (int i = 0; i < 40 && __atomic_load_n(&c->lock_waiters, __ATOMIC_SEQ_CST); i++) {
		struct timespec pause = { 0, 50000 };

		nanosleep(&pause, NULL);
	}
}

void cw_consumer_unlock(struct cw_consumer *c)
{
	pthread_mutex_unlock(&c->lock);
}

int cw_consumer_feed(struct cw_consumer *c, const void *data, size_t size)
{
	int rc;

	cw_consumer_lock(c);
	rc = consume_one(c, (void *)data, size);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void flush_locked(struct cw_consumer *c)
{
	int rc = cw_pipeline_flush(c->pipe, cw_monotonic_ns(), c->max_open_ns);

	/* A lock another process took since the last batch loses nothing:
	 * the rows wait in the writer for the next flush. */
	if (rc && rc != -EBUSY)
		c->last_error = rc;
}

static void *run(void *arg)
{
	struct cw_consumer *c = arg;
	int efd = ring_buffer__epoll_fd(c->rb);
	uint64_t last_flush = cw_monotonic_ns(), flush_ns = (uint64_t)(c->flush_ms ? c->flush_ms : 200) * 1000000ull;
	int n = 0;

	while (!c->stop) {
		struct epoll_event ev[8];
		uint64_t now;

		/* The CUDA probes do not wake us below a quarter-full ring (a
		 * wakeup per record is expensive for the traced thread), so the
		 * ring is polled: straight on after a large batch, otherwise
		 * every 5 ms (a trickle must not make this loop spin). */
		if (n < 256 && epoll_wait(efd, ev, 8, 5) > 0) {
			/* Woken by a record that asked for it (a stack to
			 * resolve while its process lives, a ring past a
			 * quarter): let the burst it started gather first. A
			 * ring wakes only a consumer that has read everything,
			 * so this bounds wakeups to one per read instead of one
			 * per record. */
			struct timespec gather = { 0, 1000000 };

			nanosleep(&gather, NULL);
		}
		pthread_mutex_lock(&c->lock);
		/* With the gate open, the spool (records held while it was
		 * closed) goes first, a round at a time, each its own batch. */
		if (c->spool_len && gate_check(c)) {
			spool_replay(c, REPLAY_PER_ROUND);
			flush_locked(c);
			last_flush = cw_monotonic_ns();
		}
		c->in_round = 1;
		c->round_from = c->records;
		n = ring_buffer__consume(c->rb);
		c->in_round = 0;
		if (n == ROUND_CUT)
			n = 256; /* records are left: straight on after the waiter */
		now = cw_monotonic_ns();
		if (!c->held && now - last_flush >= flush_ns) {
			flush_locked(c);
			last_flush = now;
		}
		pthread_mutex_unlock(&c->lock);
		hand_over(c);
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
	/* A gate still closed keeps the spool for the caller to report. */
	while (c->spool_len && gate_check(c)) {
		spool_replay(c, REPLAY_PER_ROUND);
		flush_locked(c);
	}
	if (!c->held)
		flush_locked(c);
	if (!c->spool_len) {
		free(c->spool);
		c->spool = NULL;
		c->spool_alloc = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return c->last_error;
}
