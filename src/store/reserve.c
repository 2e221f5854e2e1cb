#include "store/reserve.h"
#include "store/footprint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cw_store_reserve_take(struct cw_store_reserve *r, const char *db_path, int64_t cap)
{
	struct cw_footprint f;
	int fd, err;

	memset(r, 0, sizeof(*r));
	if ((size_t)snprintf(r->path, sizeof(r->path), "%s-reserve", db_path) >= sizeof(r->path))
		return -ENAMETOOLONG;
	fd = open(r->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Allocated, not sparse: the blocks must be the filesystem's until
	 * the file goes (tmpfs and ext4/xfs support it). */
	cw_footprint_plan(cap, 0, &f);
	err = posix_fallocate(fd, 0, cap > 0 ? f.reserve : CW_STORE_RESERVE_BYTES);
	close(fd);
	if (err) {
		unlink(r->path);
		return -err;
	}
	r->held = 1;
	return 0;
}

void cw_store_reserve_release(struct cw_store_reserve *r)
{
	if (!r->held)
		return;
	unlink(r->path);
	r->held = 0;
}
