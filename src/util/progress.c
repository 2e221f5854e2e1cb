#include "util/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/timeutil.h"

#define REDRAW_NS (250ULL * 1000000ULL)

/* One write per redraw, so that the line never tears. */
static void draw(struct cw_progress *p, uint64_t now)
{
	char line[256], size[48] = "", count[48] = "";
	struct stat sb;
	int n;

	if (p->fd >= 0 && !fstat(p->fd, &sb) && S_ISREG(sb.st_mode))
		snprintf(size, sizeof(size), ", %.1f MiB written", (double)sb.st_size / (1024.0 * 1024.0));
	if (p->unit)
		snprintf(count, sizeof(count), ", %llu %s", (unsigned long long)p->count, p->unit);
	n = snprintf(line, sizeof(line), "\r\033[Kcauseway: %s: %s ... %.1f s%s%s", p->what,
		     p->phase, (double)(now - p->start_ns) / 1e9, count, size);
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) > 0)
		p->shown = 1;
}

static void *run(void *arg)
{
	struct cw_progress *p = arg;
	struct timespec ts;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		uint64_t now = cw_monotonic_ns();

		if (now >= p->start_ns + p->after_ns)
			draw(p, now);
		/* The condition variable runs on CLOCK_MONOTONIC (start). */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)REDRAW_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	}
	if (p->shown && write(STDERR_FILENO, "\r\033[K", 4) < 0)
		p->shown = 0;
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int cw_progress_start(struct cw_progress *p, const char *what, const char *phase, int quiet)
{
	pthread_condattr_t ca;
	const char *env = getenv("CW_PROGRESS_AFTER_MS");
	char *end;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	if (quiet || !isatty(STDERR_FILENO))
		return 0;
	p->what = what;
	p->phase = phase;
	p->start_ns = cw_monotonic_ns();
	p->after_ns = 1000ULL * 1000000ULL;
	if (env && *env) {
		unsigned long v = strtoul(env, &end, 10);

		if (!*end && v <= 3600000)
			p->after_ns = (uint64_t)v * 1000000ULL;
	}
	/* No delay (tests): the line is there before the work starts. */
	if (!p->after_ns)
		draw(p, p->start_ns);
	if (pthread_condattr_init(&ca))
		goto no_thread;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&p->thread, NULL, run, p)) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		goto no_thread;
	}
	p->running = 1;
	return 0;
no_thread:
	if (p->shown && write(STDERR_FILENO, "\r\033[K", 4) < 0)
		p->shown = 0;
	return 0;
}

void cw_progress_watch_fd(struct cw_progress *p, int fd)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->mu);
	p->fd = fd;
	pthread_mutex_unlock(&p->mu);
}

void cw_progress_phase(struct cw_progress *p, const char *phase)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->mu);
	p->phase = phase;
	pthread_mutex_unlock(&p->mu);
}

void cw_progress_count(struct cw_progress *p, uint64_t n, const char *unit)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->mu);
	p->count = n;
	p->unit = unit;
	pthread_mutex_unlock(&p->mu);
}

void cw_progress_hold(struct cw_progress *p)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->shown && write(STDERR_FILENO, "\r\033[K", 4) < 0)
		p->shown = 0;
}

void cw_progress_release(struct cw_progress *p)
{
	if (p->running)
		pthread_mutex_unlock(&p->mu);
}

void cw_progress_end(struct cw_progress *p)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	p->running = 0;
}
