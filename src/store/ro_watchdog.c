/* The statement watchdog (ro_guard.h): one thread, started with the first
 * statement, interrupts each armed connection at its deadline. The
 * progress handler stops a statement between steps; this stops the loops
 * inside one step that check for an interrupt but never call the handler
 * (count(*) over a whole table, a sort). */
#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "store/ro_guard.h"
#include "util/timeutil.h"

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond;
static struct cw_ro_watch *watches;
static int watch_started;

static void *watchdog(void *arg)
{
	struct cw_ro_watch *w;
	struct timespec ts;
	uint64_t now, next;

	(void)arg;
	pthread_mutex_lock(&watch_lock);
	for (;;) {
		now = cw_monotonic_ns();
		next = 0;
		for (w = watches; w; w = w->next) {
			if (w->fired)
				continue;
			if (w->deadline_ns <= now) {
				/* Safe from another thread while the connection
				 * is open; disarm (under this lock) comes first. */
				sqlite3_interrupt(w->db);
				w->fired = 1;
			} else if (!next || w->deadline_ns < next) {
				next = w->deadline_ns;
			}
		}
		if (!next) {
			pthread_cond_wait(&watch_cond, &watch_lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000ULL);
		ts.tv_nsec = (long)(next % 1000000000ULL);
		pthread_cond_timedwait(&watch_cond, &watch_lock, &ts);
	}
	return NULL;
}

static int watch_start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t at;
	pthread_t th;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&watch_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 64 << 10);
	rc = pthread_create(&th, &at, watchdog, NULL);
	pthread_attr_destroy(&at);
	return -rc;
}

int cw_ro_watch_arm(struct cw_ro_watch *w, sqlite3 *db, uint64_t deadline_ns)
{
	int rc = 0;

	w->db = db;
	w->deadline_ns = deadline_ns;
	w->fired = 0;
	w->prev = NULL;
	pthread_mutex_lock(&watch_lock);
	if (!watch_started && !(rc = watch_start()))
		watch_started = 1;
	if (!rc) {
		w->next = watches;
		if (watches)
			watches->prev = w;
		watches = w;
		pthread_cond_signal(&watch_cond);
	}
	pthread_mutex_unlock(&watch_lock);
	if (rc)
		w->db = NULL;
	return rc;
}

int cw_ro_watch_disarm(struct cw_ro_watch *w)
{
	if (!w->db)
		return 0;
	pthread_mutex_lock(&watch_lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		watches = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pthread_mutex_unlock(&watch_lock);
	w->db = NULL;
	return w->fired;
}
