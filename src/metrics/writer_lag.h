/* Writer lag of a running trace session, for /metrics on `trace --serve`:
 * how far the store trails the events handed to it.
 *
 * The consumer thread reports every row it hands to the writer (its
 * event's end time); commits are learnt through one accessor, a poll
 * function that returns a count which moves on every commit (today
 * cw_writer_get_stats()'s batches, read under the consumer lock; a writer
 * with its own thread re-points the poll function and nothing else). A row
 * counts as committed at the first poll that sees the count move after it
 * was handed over: polls run on every row, once a second and on every
 * scrape, so in a quiet moment a row's figure can read up to a second
 * high, never low. */
#ifndef CW_METRICS_WRITER_LAG_H
#define CW_METRICS_WRITER_LAG_H

#include <stdint.h>

#include "util/strbuf.h"

struct cw_writer_lag;

/* Returns 0 and the writer's commit count in *commits, or -errno. May be
 * called from any thread; it takes whatever lock the writer needs. */
typedef int (*cw_writer_commits_fn)(void *ctx, uint64_t *commits);

int cw_writer_lag_new(struct cw_writer_lag **out, cw_writer_commits_fn poll, void *ctx);
void cw_writer_lag_free(struct cw_writer_lag *l);

/* The writer's thread (or the thread that calls it), with its lock held:
 * a row was handed to the writer; event_mono_ns is when the event ended,
 * commits the count the writer shows now (so a commit that happened before
 * this row is not credited to it). */
void cw_writer_lag_row(struct cw_writer_lag *l, uint64_t event_mono_ns, uint64_t commits, uint64_t now_mono_ns);
/* A poll with the count already read (lock held by the caller). */
void cw_writer_lag_commits(struct cw_writer_lag *l, uint64_t commits, uint64_t now_mono_ns);

struct cw_writer_lag_view {
	uint64_t pending_rows;   /* handed over, not yet committed */
	uint64_t oldest_ns;      /* age of the oldest of them now; 0 none */
	uint64_t committed_rows;
	uint64_t buckets[27];    /* per committed row: event end -> commit (CW_PROM_BUCKETS + 1) */
	uint64_t sum_ns;
};

/* Polls through the accessor and fills v. Returns 0 or the poll's -errno
 * (v then holds the figures of the last successful poll). */
int cw_writer_lag_read(struct cw_writer_lag *l, uint64_t now_mono_ns, struct cw_writer_lag_view *v);

/* Appends causeway_writer_lag_seconds, causeway_writer_pending_rows and
 * causeway_writer_commit_lag_seconds for node. Returns 0 or -ENOMEM. */
int cw_writer_lag_render(struct cw_writer_lag *l, const char *node, uint64_t now_mono_ns, struct strbuf *sb);

#endif
