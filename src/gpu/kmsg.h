/* The kernel log as the Xid source: one way to open it, shared by trace's
 * sampler and `check` (so check answers for exactly what trace will do). */
#ifndef CW_GPU_KMSG_H
#define CW_GPU_KMSG_H

#define CW_KMSG_PATH "/dev/kmsg"

/* Opens path (NULL: /dev/kmsg) for reading, non-blocking, positioned at
 * the end of the log: only faults from now on, the backlog belongs to
 * earlier runs. Returns the descriptor or -errno: -ENOENT no such node
 * (not mounted into a container), -EPERM without CAP_SYSLOG where
 * kernel.dmesg_restrict is 1, or refused by a device cgroup. */
int cw_kmsg_open(const char *path);

/* kernel.dmesg_restrict: 1, 0, or -1 when it cannot be read. */
int cw_kmsg_restricted(void);

#endif
