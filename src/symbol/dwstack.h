/* Native stacks through DWARF call-frame information, for `causeway where`:
 * elfutils' libdwfl unwinds threads that cw_threads_stop (fpstack.h)
 * already holds stopped, reading .eh_frame (or .debug_frame from a
 * build-id debug file) of every mapped object.
 *
 * Every object and debug file is opened through /proc/PID/root or
 * /proc/PID/map_files (symbol/procmaps.h), never by the host path alone: a
 * container's libc is not the host's, and the wrong file's CFI would
 * produce a plausible but false stack. No debuginfod, no downloads.
 *
 * Remote memory is hostile: each walk is capped in frames and by a
 * deadline checked at every frame; a walk that hits either stops there
 * (the frames found so far are kept). */
#ifndef CW_SYMBOL_DWSTACK_H
#define CW_SYMBOL_DWSTACK_H

#include <stdint.h>
#include <sys/types.h>

struct cw_dwstack;

/* Reports the modules of pid, opens their objects and debug files, and
 * attaches libdwfl to its threads, which the caller must then stop
 * (cw_threads_stop) and keep stopped until cw_dwstack_close. Called while
 * the process runs: its files are its own to choose, and none is opened
 * while it is held stopped. Returns 0, -ENOTSUP when this build has no
 * DWARF unwinder, or -errno. */
int cw_dwstack_open(pid_t pid, struct cw_dwstack **out);
/* From now on no file is opened (the process is stopped): a module not
 * opened before unwinds without its CFI. */
void cw_dwstack_freeze(struct cw_dwstack *d);
void cw_dwstack_close(struct cw_dwstack *d);

/* Unwinds thread tid: ips[0] is its pc, then each caller's return address.
 * Stops at max frames or at deadline_ns (CLOCK_MONOTONIC). Returns the
 * count (> 0; *truncated set when a cap stopped it), or -errno with why
 * filled (libdwfl's message) when not even the first frame was read. */
int cw_dwstack_thread(struct cw_dwstack *d, pid_t tid, uint64_t *ips, int max, uint64_t deadline_ns,
		      int *truncated, char *why, size_t whylen);

/* Whether this build can unwind through DWARF (0 when the release was
 * built without it). */
int cw_dwstack_available(void);

#endif
