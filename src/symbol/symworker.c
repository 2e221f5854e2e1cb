/* The symbolizing thread and its deadline (symworker.h). */
#include "symbol/symworker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbol/symbolizer.h"

#define MAX_FRAMES 64
#define LINE 512
#define MAX_FORGETS 256

struct cw_symworker {
	pthread_mutex_t mu;
	pthread_cond_t wake; /* to the worker: a stack, a forget, or stop */
	pthread_cond_t done; /* to the caller: the stack of seq is named */
	pthread_t thr;
	struct cw_symz *z;   /* the worker's alone */
	uint64_t deadline_ns;
	/* Under mu. */
	int busy;            /* a stack given and not yet named (maybe abandoned) */
	int stop;
	uint64_t seq, done_seq;
	uint32_t pid, n;
	uint64_t ips[MAX_FRAMES];
	char lines[MAX_FRAMES][LINE];
	uint32_t forget[MAX_FORGETS];
	int nforget;
	struct cw_symworker_stats st;
};

static void name_stack(struct cw_symz *z, uint32_t pid, const uint64_t *ips, uint32_t n, char (*lines)[LINE])
{
	for (uint32_t i = 0; i < n; i++) {
		/* Frames after the first are return addresses: the call is the
		 * instruction before, which matters when it ends a function. */
		uint64_t ip = i && ips[i] ? ips[i] - 1 : ips[i];

		if (cw_symz_symbolize(z, pid, ip, lines[i], LINE))
			snprintf(lines[i], LINE, "0x%llx", (unsigned long long)ips[i]);
	}
}

static void *run(void *arg)
{
	struct cw_symworker *w = arg;
	uint32_t forget[MAX_FORGETS], pid, n;
	uint64_t ips[MAX_FRAMES], seq;
	char(*lines)[LINE] = malloc(sizeof(char[MAX_FRAMES][LINE]));
	int nforget, i;

	if (!lines)
		return NULL;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && !w->nforget && !(w->busy && w->done_seq != w->seq))
			pthread_cond_wait(&w->wake, &w->mu);
		if (w->stop)
			break;
		nforget = w->nforget;
		memcpy(forget, w->forget, (size_t)nforget * sizeof(forget[0]));
		w->nforget = 0;
		n = 0;
		seq = w->seq;
		pid = w->pid;
		if (w->busy && w->done_seq != seq) {
			n = w->n;
			memcpy(ips, w->ips, n * sizeof(ips[0]));
		}
		pthread_mutex_unlock(&w->mu);
		for (i = 0; i < nforget; i++)
			cw_symz_forget(w->z, forget[i]);
		if (n)
			name_stack(w->z, pid, ips, n, lines);
		pthread_mutex_lock(&w->mu);
		if (n) {
			memcpy(w->lines, lines, (size_t)n * LINE);
			w->done_seq = seq;
			w->busy = 0;
			pthread_cond_broadcast(&w->done);
		}
	}
	pthread_mutex_unlock(&w->mu);
	free(lines);
	return NULL;
}

static int symbolize_stack(void *ctx, uint32_t pid, const uint64_t *ips, uint32_t n, char *lines, size_t linelen)
{
	struct cw_symworker *w = ctx;
	struct timespec until;
	uint64_t seq, ns;
	int rc = 0;

	if (n > MAX_FRAMES)
		n = MAX_FRAMES;
	if (!n)
		return 0;
	pthread_mutex_lock(&w->mu);
	if (w->busy) {
		/* Still held by a file from an earlier stack: not even tried. */
		w->st.skipped++;
		pthread_mutex_unlock(&w->mu);
		return -EBUSY;
	}
	w->busy = 1;
	seq = ++w->seq;
	w->pid = pid;
	w->n = n;
	memcpy(w->ips, ips, n * sizeof(ips[0]));
	pthread_cond_signal(&w->wake);
	clock_gettime(CLOCK_MONOTONIC, &until);
	ns = (uint64_t)until.tv_nsec + w->deadline_ns;
	until.tv_sec += (time_t)(ns / 1000000000ULL);
	until.tv_nsec = (long)(ns % 1000000000ULL);
	while (w->done_seq != seq && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&w->done, &w->mu, &until);
	if (w->done_seq == seq) {
		for (uint32_t i = 0; i < n; i++)
			snprintf(lines + i * linelen, linelen, "%s", w->lines[i]);
		w->st.stacks++;
		rc = 0;
	} else {
		w->st.stalled++;
		rc = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int cw_symworker_new(struct cw_symworker **out, uint64_t deadline_ns)
{
	struct cw_symworker *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->deadline_ns = deadline_ns;
	if ((err = cw_symz_new(&w->z))) {
		free(w);
		return err;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->done, &ca);
	pthread_condattr_destroy(&ca);
	if ((err = -pthread_create(&w->thr, NULL, run, w))) {
		cw_symz_free(w->z);
		free(w);
		return err;
	}
	*out = w;
	return 0;
}

void cw_symworker_free(struct cw_symworker *w)
{
	int held;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	held = w->busy;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
	if (held) {
		/* Its file may never answer: the thread keeps w, and ends with
		 * the process. */
		pthread_detach(w->thr);
		return;
	}
	pthread_join(w->thr, NULL);
	cw_symz_free(w->z);
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

void cw_symworker_as_symbolizer(struct cw_symworker *w, struct cw_symbolizer *out)
{
	out->symbolize_stack = symbolize_stack;
	out->ctx = w;
}

void cw_symworker_forget(struct cw_symworker *w, uint32_t pid)
{
	pthread_mutex_lock(&w->mu);
	/* A full list drops the request: the cache has a slot per pid modulo
	 * its size, and a reused pid re-reads its map on the first address
	 * outside it. */
	if (w->nforget < MAX_FORGETS)
		w->forget[w->nforget++] = pid;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
}

void cw_symworker_get_stats(struct cw_symworker *w, struct cw_symworker_stats *out)
{
	pthread_mutex_lock(&w->mu);
	*out = w->st;
	pthread_mutex_unlock(&w->mu);
}
