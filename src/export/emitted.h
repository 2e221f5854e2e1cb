/* The slices an export has written, by key (event id, or off-CPU id with
 * CW_KEY_OFFCPU), with the track each landed on: what the chain markers
 * and arrows look up after every slice is out. One entry per slice would
 * grow with the trace in memory, so the entries live in a private
 * temporary SQLite database (deleted when closed) whose page cache is the
 * only memory they take. */
#ifndef CW_EXPORT_EMITTED_H
#define CW_EXPORT_EMITTED_H

#include <sqlite3.h>
#include <stdint.h>

struct pf_emitted {
	sqlite3 *db;
	sqlite3_stmt *put, *get;
};

int pf_emitted_open(struct pf_emitted *e);
/* key != 0; a key written again replaces its value. 0 or -errno. */
int pf_emitted_put(struct pf_emitted *e, uint64_t key, int64_t val);
/* 1 with *val when the key was written, 0 when not, -errno. */
int pf_emitted_get(struct pf_emitted *e, uint64_t key, int64_t *val);
void pf_emitted_close(struct pf_emitted *e);

#endif
