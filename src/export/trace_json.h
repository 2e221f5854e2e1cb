/* Chrome trace JSON ("traceEvents", the format ui.perfetto.dev and
 * chrome://tracing open): a streaming writer and the slice-nesting helper.
 *
 * The writer dumps one event at a time (jansson per event, compact, one
 * event per line), so memory stays bounded however long the trace is.
 *
 * Complete ("X") slices on one thread track must nest: a slice either lies
 * inside another or after it. Off-CPU intervals and block I/O are not
 * obliged to nest inside the calls they overlap (a request issued in one
 * call completes in the next), so slices that would partially overlap are
 * moved to an extra lane of the same thread instead of being clipped:
 * durations stay true and every lane nests. */
#ifndef CW_EXPORT_TRACE_JSON_H
#define CW_EXPORT_TRACE_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cw_tracew {
	FILE *f;
	uint64_t nevents;
	int err; /* first write error, -errno */
};

/* Writes the opening of {"traceEvents":[ ... */
int cw_tracew_begin(struct cw_tracew *w, FILE *f);
/* Appends one event and releases it (the reference is stolen, also on
 * error). Returns 0 or -errno. */
int cw_tracew_event(struct cw_tracew *w, json_t *ev);
/* Closes the array and writes the remaining top-level members:
 * "displayTimeUnit":"ms" and "otherData" (stolen; may be NULL). */
int cw_tracew_end(struct cw_tracew *w, json_t *other);

/* A JSON string of user data (comm, kernel and file names, node names:
 * bytes from the kernel, ELF files or another process's memory). jansson
 * refuses invalid UTF-8; the bytes that are not valid UTF-8 become U+FFFD
 * instead of losing the event, and text past 2 KiB is cut ("\u2026").
 * NULL s gives "". NULL only on ENOMEM. */
json_t *cw_trace_str(const char *s);
json_t *cw_trace_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Timestamps: microseconds as JSON reals with nanosecond digits. */
json_t *cw_trace_us(int64_t ns);

struct cw_slice {
	int64_t start, end; /* ns, end >= start */
	uint64_t key;       /* caller's identity; the tie-breaker of the order */
	int lane;           /* out: 0 = the thread's own track */
};

/* Sorts v by start (then longer first, then key) and gives every slice
 * the lowest lane on which it nests, at most max_lanes of them: a slice
 * that would need one more gets lane -1 (left out; the caller counts it).
 * Returns the number of lanes used (0 for n == 0) or -ENOMEM. */
int cw_slices_assign_lanes(struct cw_slice *v, size_t n, int max_lanes);
/* The same placement one slice at a time, for slices arriving in that
 * order (start, then longer first, then key): memory holds the slices
 * still open on each lane, never the ones placed, so a thread of any
 * length is laid out in a bounded space. Zeroed to start; reset between
 * threads; free at the end. */
struct cw_lanes {
	struct cw_lane *v;
	int n;   /* lanes used so far */
	int cap;
};
/* The lane of [start, end) (end >= start), -1 when it would need more
 * than max_lanes, -ENOMEM. */
int cw_lanes_place(struct cw_lanes *l, int64_t start, int64_t end, int max_lanes);
void cw_lanes_reset(struct cw_lanes *l);
void cw_lanes_free(struct cw_lanes *l);
/* 1 when the slices of every lane nest properly (v sorted as above). */
int cw_slices_nest_ok(const struct cw_slice *v, size_t n);

#endif
