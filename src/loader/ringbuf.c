/* ringbuf: consumer thread, BPF rings -> cw_pipeline_feed. */
#define _GNU_SOURCE /* process_vm_readv */
#include "loader/ringbuf.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

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

int cw_consumer_sample(void *ctx, void *data, size_t size)
{
	struct cw_consumer *c = ctx;
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
		n = ring_buffer__consume(c->rb);
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
