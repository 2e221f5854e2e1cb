/* Read deadlines for the API's connections.
 *
 * libmicrohttpd's connection timeout is an idle timeout: every byte received
 * resets it. A client that sends a byte of its TLS handshake, its request
 * headers or its body every few seconds therefore keeps its connection, and
 * one of its address's --per-ip slots, for as long as it likes; a handful of
 * them lock that address out. Here every connection has a deadline by which
 * a whole request must have arrived: read_timeout after the connection
 * opened, or after the previous answer went out (which also bounds how long
 * a kept-alive connection may sit idle). While a request is being answered
 * there is no deadline; the per-request --timeout covers that.
 *
 * A watchdog thread shuts down (shutdown(2), not close) the socket of a
 * connection past its deadline: the connection's own thread then sees the
 * end of its input and libmicrohttpd closes it as usual. Entries are added
 * and removed from libmicrohttpd's connection notifications, under the same
 * lock the watchdog holds, and libmicrohttpd (0.9.75, daemon.c) reports a
 * connection closed before it closes the socket, so the watchdog never
 * touches a descriptor that has been reused. */
#define _GNU_SOURCE
#include "server/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "util/timeutil.h"

/* How late a cut may come after its deadline: the watchdog's longest nap. */
#define CW_DEADLINE_TICK_NS (200ULL * 1000000ULL)

struct cw_conn_deadline {
	struct cw_conn_deadline *prev, *next;
	int fd;
	int cut;              /* shut down by the watchdog */
	uint64_t deadline_ns; /* monotonic; 0 while a request is answered */
};

static void *watchdog(void *arg)
{
	struct cw_deadlines *d = arg;
	struct cw_conn_deadline *e;
	struct timespec ts;
	uint64_t now, wake;

	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		now = cw_monotonic_ns();
		wake = now + CW_DEADLINE_TICK_NS;
		for (e = d->head; e; e = e->next) {
			if (!e->deadline_ns || e->cut)
				continue;
			if (e->deadline_ns <= now) {
				shutdown(e->fd, SHUT_RDWR);
				e->cut = 1;
				atomic_fetch_add(&d->closed, 1);
			} else if (e->deadline_ns < wake) {
				wake = e->deadline_ns;
			}
		}
		ts.tv_sec = (time_t)(wake / 1000000000ULL);
		ts.tv_nsec = (long)(wake % 1000000000ULL);
		pthread_cond_timedwait(&d->cond, &d->lock, &ts);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int cw_deadlines_start(struct cw_deadlines *d, uint64_t read_timeout_ns)
{
	pthread_condattr_t ca;
	int rc;

	memset(d, 0, sizeof(*d));
	d->timeout_ns = read_timeout_ns;
	pthread_mutex_init(&d->lock, NULL);
	/* Deadlines are monotonic (cw_monotonic_ns), so is the wait. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	d->inited = 1;
	rc = pthread_create(&d->thread, NULL, watchdog, d);
	if (rc)
		return -rc;
	d->running = 1;
	return 0;
}

void cw_deadlines_stop(struct cw_deadlines *d)
{
	struct cw_conn_deadline *e;

	if (!d->inited)
		return;
	if (d->running) {
		pthread_mutex_lock(&d->lock);
		d->stop = 1;
		pthread_cond_signal(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	while ((e = d->head)) { /* the daemon is stopped: no one else holds these */
		d->head = e->next;
		free(e);
	}
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	d->inited = 0;
}

void cw_deadlines_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			 enum MHD_ConnectionNotificationCode code)
{
	struct cw_deadlines *d = cls;
	struct cw_conn_deadline *e = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		e = calloc(1, sizeof(*e));
		if (!e || !ci) {
			/* Without an entry the connection has only the idle
			 * timeout; refuse it rather than serve it unguarded. */
			free(e);
			if (ci)
				shutdown(ci->connect_fd, SHUT_RDWR);
			return;
		}
		e->fd = ci->connect_fd;
		pthread_mutex_lock(&d->lock);
		e->deadline_ns = cw_monotonic_ns() + d->timeout_ns;
		e->next = d->head;
		if (d->head)
			d->head->prev = e;
		d->head = e;
		pthread_mutex_unlock(&d->lock);
		*socket_context = e;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !e)
		return;
	pthread_mutex_lock(&d->lock);
	if (e->prev)
		e->prev->next = e->next;
	else
		d->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	pthread_mutex_unlock(&d->lock);
	free(e);
	*socket_context = NULL;
}

void cw_deadline_arm(struct cw_deadlines *d, struct MHD_Connection *c, int armed)
{
	const union MHD_ConnectionInfo *ci;
	struct cw_conn_deadline *e;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (!ci || !(e = ci->socket_context))
		return;
	pthread_mutex_lock(&d->lock);
	e->deadline_ns = armed ? cw_monotonic_ns() + d->timeout_ns : 0;
	pthread_mutex_unlock(&d->lock);
}
