/* Small kernel files (/proc, cgroupfs, sysfs): the kernel hands a file of
 * a page or less out whole in one read(2), so one read is the whole file. */
#ifndef CW_UTIL_READFILE_H
#define CW_UTIL_READFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Reads up to cap - 1 bytes of path with one read, NUL-terminated.
 * Returns the length or -errno. */
ssize_t cw_read_small(const char *path, char *buf, size_t cap);

#endif
