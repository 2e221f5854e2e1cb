/* The GPU telemetry thread (sampler.h). One thread owns NVML (which is
 * not re-entrant per handle) and the kmsg descriptor; between samples it
 * waits on the kernel log, so an Xid is stored within ~100 ms. NVML's Xid
 * events wait two seconds before they are stored, so that the kernel
 * log's line for the same fault, which names the process, wins the
 * deduplication. */
#define _GNU_SOURCE
#include "gpu/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/kmsg.h"
#include "gpu/nvml.h"
#include "util/timeutil.h"

#define NVML_GRACE_NS (2ULL * NSEC_PER_SEC)
#define PENDING_MAX 32
#define PROCS_MAX 64

struct pending {
	struct cw_xid x;
	int device;
	uint64_t t;
};

struct cw_gpu_sampler {
	struct cw_gpu_sampler_opts o;
	struct cw_gpu_sink sink;
	struct cw_nvml *nvml;
	int kfd;
	pthread_t th;
	int started;
	volatile int stop;
	pthread_mutex_t mu;
	struct cw_gpu_sampler_stats st;
	struct cw_xid_dedup dd;
	struct pending pend[PENDING_MAX];
	int npend;
	char pci[CW_GPU_MAX][32]; /* normalised, per NVML device */
};

static uint64_t wall_now(void)
{
	return cw_realtime_ns();
}

static int device_of(const struct cw_gpu_sampler *s, const char *pci)
{
	int n = s->nvml ? cw_nvml_count(s->nvml) : 0;

	for (int i = 0; pci[0] && i < n; i++)
		if (!strcmp(s->pci[i], pci) && cw_nvml_device(s->nvml, i)->parent < 0)
			return i;
	return -1;
}

static void emit_xid(struct cw_gpu_sampler *s, const struct cw_xid *x, int device, uint64_t now, const char *from)
{
	if (cw_xid_dedup_check(&s->dd, x->pci, x->code, now)) {
		pthread_mutex_lock(&s->mu);
		s->st.xid_duplicates++;
		pthread_mutex_unlock(&s->mu);
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (from[0] == 'k')
		s->st.xid_kmsg++;
	else
		s->st.xid_nvml++;
	pthread_mutex_unlock(&s->mu);
	if (s->sink.xid)
		s->sink.xid(s->sink.ctx, x, device, now, from);
}

static void read_kmsg(struct cw_gpu_sampler *s)
{
	char buf[CW_XID_LINE_MAX + 1];

	for (int i = 0; i < 256; i++) {
		struct cw_xid x;
		ssize_t n = read(s->kfd, buf, sizeof(buf) - 1);
		int rc;

		if (n < 0) {
			if (errno == EPIPE)
				continue; /* overwritten records: go on from the next */
			return;
		}
		if (n == 0)
			return;
		s->st.kmsg_records++;
		rc = cw_xid_parse(buf, (size_t)n, &x);
		if (rc < 0) {
			pthread_mutex_lock(&s->mu);
			s->st.kmsg_rejected++;
			pthread_mutex_unlock(&s->mu);
		}
		if (rc == 1)
			emit_xid(s, &x, device_of(s, x.pci), cw_monotonic_ns(), "kmsg");
	}
}

static void nvml_events(struct cw_gpu_sampler *s, uint64_t now)
{
	int dev, i;
	uint64_t code;

	while (s->npend < PENDING_MAX && cw_nvml_event_wait(s->nvml, 0, &dev, &code) == 1) {
		struct pending *p = &s->pend[s->npend++];
		const struct cw_gpu_device *d = cw_nvml_device(s->nvml, dev);

		memset(p, 0, sizeof(*p));
		p->x.pid = -1;
		p->x.code = code > CW_XID_CODE_MAX ? 0 : (uint32_t)code;
		if (d)
			memcpy(p->x.pci, s->pci[dev], sizeof(p->x.pci));
		snprintf(p->x.text, sizeof(p->x.text), "NVML critical Xid event");
		p->device = dev;
		p->t = now;
		if (!p->x.code)
			s->npend--;
	}
	for (i = 0; i < s->npend;) {
		if (now - s->pend[i].t < NVML_GRACE_NS) {
			i++;
			continue;
		}
		emit_xid(s, &s->pend[i].x, s->pend[i].device, s->pend[i].t, "nvml");
		s->pend[i] = s->pend[--s->npend];
	}
}

static void sample_all(struct cw_gpu_sampler *s)
{
	int n = cw_nvml_count(s->nvml);
	struct cw_gpu_sample sm[CW_GPU_MAX];
	struct cw_gpu_device devs[CW_GPU_MAX];
	struct cw_gpu_proc procs[PROCS_MAX];
	uint64_t t0 = cw_monotonic_ns(), wall = wall_now(), spent;

	for (int i = 0; i < n; i++) {
		cw_nvml_sample(s->nvml, i, &sm[i]);
		sm[i].mono_ns = t0;
		sm[i].wall_ns = wall;
		devs[i] = *cw_nvml_device(s->nvml, i);
	}
	spent = cw_monotonic_ns() - t0;
	if (s->sink.samples && n)
		s->sink.samples(s->sink.ctx, sm, n, devs);
	if (!s->o.no_processes && s->sink.process) {
		for (int i = 0; i < n; i++) {
			uint64_t p0 = cw_monotonic_ns();
			int np = cw_nvml_processes(s->nvml, i, procs, PROCS_MAX);
			spent += cw_monotonic_ns() - p0;
			for (int k = 0; k < np; k++)
				s->sink.process(s->sink.ctx, i, t0, wall, &procs[k]);
		}
	}
	pthread_mutex_lock(&s->mu);
	s->st.intervals++;
	s->st.samples += (uint64_t)n;
	s->st.sample_ns += spent;
	pthread_mutex_unlock(&s->mu);
}

static void *run(void *arg)
{
	struct cw_gpu_sampler *s = arg;
	uint64_t next = cw_monotonic_ns();

	while (!s->stop) {
		uint64_t now = cw_monotonic_ns();
		int wait_ms;

		if (s->nvml && now >= next) {
			sample_all(s);
			next += s->o.interval_ns;
			if (next < now)
				next = now + s->o.interval_ns;
		}
		if (s->nvml)
			nvml_events(s, now);
		/* Wake at least every 100 ms: stop requests and NVML events. */
		wait_ms = 100;
		if (s->nvml && next > now && (next - now) / 1000000 < (uint64_t)wait_ms)
			wait_ms = (int)((next - now) / 1000000) + 1;
		if (s->kfd >= 0) {
			struct pollfd pfd = {.fd = s->kfd, .events = POLLIN};
			if (poll(&pfd, 1, wait_ms) > 0)
				read_kmsg(s);
		} else {
			struct timespec ts = {0, (long)wait_ms * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	/* NVML events still in their grace period are stored now. */
	if (s->nvml)
		nvml_events(s, UINT64_MAX / 2);
	return NULL;
}

int cw_gpu_sampler_start(struct cw_gpu_sampler **out, const struct cw_gpu_sampler_opts *o,
			 const struct cw_gpu_sink *sink, char *why, size_t whylen)
{
	struct cw_gpu_sampler *s = calloc(1, sizeof(*s));
	const char *kp;
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.interval_ns)
		s->o.interval_ns = NSEC_PER_SEC;
	s->sink = *sink;
	s->kfd = -1;
	pthread_mutex_init(&s->mu, NULL);
	why[0] = '\0';
	if (!cw_nvml_open(&s->nvml, o->nvml_path, why, whylen)) {
		s->st.nvml = 1;
		s->st.ndev = cw_nvml_count(s->nvml);
		for (int i = 0; i < s->st.ndev; i++) {
			const struct cw_gpu_device *d = cw_nvml_device(s->nvml, i);
			cw_xid_pci_norm(d->pci, s->pci[i], sizeof(s->pci[i]));
			if (sink->device)
				sink->device(sink->ctx, d, cw_nvml_driver(s->nvml));
		}
		s->st.events = cw_nvml_events_enable(s->nvml);
	}
	kp = o->kmsg_path ? o->kmsg_path : CW_KMSG_PATH;
	if (*kp) {
		int fd = cw_kmsg_open(kp);

		s->kfd = fd >= 0 ? fd : -1;
		s->st.kmsg = s->kfd >= 0;
	}
	rc = pthread_create(&s->th, NULL, run, s);
	if (rc) {
		cw_gpu_sampler_stop(s);
		return -rc;
	}
	s->started = 1;
	*out = s;
	return 0;
}

void cw_gpu_sampler_stats(struct cw_gpu_sampler *s, struct cw_gpu_sampler_stats *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->st;
	out->xid_duplicates = s->dd.duplicates;
	pthread_mutex_unlock(&s->mu);
}

void cw_gpu_sampler_stop(struct cw_gpu_sampler *s)
{
	if (!s)
		return;
	s->stop = 1;
	if (s->started)
		pthread_join(s->th, NULL);
	if (s->kfd >= 0)
		close(s->kfd);
	cw_nvml_close(s->nvml);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
