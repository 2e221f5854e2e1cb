/* Opening /dev/kmsg for Xid lines (kmsg.h). */
#define _GNU_SOURCE
#include "gpu/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int cw_kmsg_open(const char *path)
{
	int fd = open(path ? path : CW_KMSG_PATH, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* ESPIPE: a plain file or pipe given as the log (tests) reads from
	 * where it is. */
	if (lseek(fd, 0, SEEK_END) < 0 && errno != ESPIPE) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int cw_kmsg_restricted(void)
{
	FILE *f = fopen("/proc/sys/kernel/dmesg_restrict", "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}
