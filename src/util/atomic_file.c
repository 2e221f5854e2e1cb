#define _GNU_SOURCE
#include "util/atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cw_atomic_open(struct cw_atomic_file *a, const char *path, char *err, size_t errlen)
{
	int fd, rc;

	memset(a, 0, sizeof(*a));
	if (asprintf(&a->tmp, "%s.tmp-XXXXXX", path) < 0) {
		a->tmp = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	a->path = strdup(path);
	fd = a->path ? mkstemp(a->tmp) : -1;
	if (fd < 0 || !(a->f = fdopen(fd, "w"))) {
		rc = a->path ? -errno : -ENOMEM;
		snprintf(err, errlen, "cannot write \"%s\": %s", path, strerror(-rc));
		if (fd >= 0) {
			close(fd);
			unlink(a->tmp);
		}
		free(a->tmp);
		free(a->path);
		memset(a, 0, sizeof(*a));
		return rc;
	}
	return 0;
}

int cw_atomic_close(struct cw_atomic_file *a, int ok, char *err, size_t errlen)
{
	int rc = 0;
	mode_t mask;

	if (!a->f)
		return 0;
	/* mkstemp made it 0600; the result is an ordinary file. */
	mask = umask(0);
	umask(mask);
	fchmod(fileno(a->f), 0666 & ~mask);
	if (fclose(a->f) && ok) {
		rc = -EIO;
		snprintf(err, errlen, "cannot write \"%s\": %s", a->path, strerror(errno));
	}
	if (ok && !rc && rename(a->tmp, a->path)) {
		rc = -errno;
		snprintf(err, errlen, "cannot rename to \"%s\": %s", a->path, strerror(errno));
	}
	if (!ok || rc)
		unlink(a->tmp);
	free(a->tmp);
	free(a->path);
	memset(a, 0, sizeof(*a));
	return rc;
}
