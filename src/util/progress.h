/* One updating line on stderr while a command's local work runs past about
 * a second: "causeway: explain: analysing the store ... 3.2 s". Only when
 * stderr is a terminal and the output is not --json; nothing otherwise.
 * A thread of its own redraws the line four times a second, so the work
 * needs no hooks; the command names the phase and, for a file it writes,
 * the descriptor whose size says how far it got. The line is cleared at
 * the end, leaving the terminal as it was. */
#ifndef CW_UTIL_PROGRESS_H
#define CW_UTIL_PROGRESS_H

#include <pthread.h>
#include <stdint.h>

struct cw_progress {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const char *what, *phase; /* under mu */
	uint64_t start_ns, after_ns;
	int fd;                   /* -1: no output file to measure */
	uint64_t count;           /* under mu: rows so far (unit set) */
	const char *unit;         /* NULL: no count shown */
	int running, stop, shown;
};

/* Starts the line for command what doing phase ("analysing the store";
 * both strings outlive p), unless quiet (--json) or stderr is not a
 * terminal; $CW_PROGRESS_AFTER_MS replaces the one-second delay (tests;
 * 0 draws the line at once). Returns 0; on failure to start the thread
 * the work just goes on without a line. */
int cw_progress_start(struct cw_progress *p, const char *what, const char *phase, int quiet);
/* Reports the size of the file open at fd (written by the work). */
void cw_progress_watch_fd(struct cw_progress *p, int fd);
/* Names the phase now running (phase outlives p). */
void cw_progress_phase(struct cw_progress *p, const char *phase);
/* Shows ", N unit" (rows fetched so far); unit NULL hides it. */
void cw_progress_count(struct cw_progress *p, uint64_t n, const char *unit);
/* Around a message printed on stderr while the line runs: hold clears
 * the line and keeps it from being redrawn until release. */
void cw_progress_hold(struct cw_progress *p);
void cw_progress_release(struct cw_progress *p);
/* Stops the thread and clears the line. Safe on a reporter never started. */
void cw_progress_end(struct cw_progress *p);

#endif
