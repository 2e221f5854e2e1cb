/* Temporary files removed when SIGINT, SIGTERM or SIGHUP ends the process
 * before they were renamed into place. The handler only calls unlinkat
 * (async-signal-safe), then hands the signal on: to the handler that was
 * there before, or to the default action by re-raising it. A signal that
 * was ignored stays ignored. */
#ifndef CW_UTIL_TMP_CLEANUP_H
#define CW_UTIL_TMP_CLEANUP_H

#define CW_TMP_SLOTS 16
#define CW_TMP_NAMES 4 /* a file and, for a database, its -wal, -shm and -journal */

/* Registers names (up to CW_TMP_NAMES, each < 256 bytes) inside dirfd,
 * which must stay open until cw_tmp_unregister. Returns a slot >= 0, or
 * -ENOSPC when all slots are in use (the files are then not removed on a
 * signal). Thread-safe. */
int cw_tmp_register(int dirfd, const char *const *names, int n);
void cw_tmp_unregister(int slot);

#endif
