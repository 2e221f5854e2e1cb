#define _GNU_SOURCE
#include "util/atomic_file.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static int finish_open(struct cw_atomic_file *a, int rc, char *err, size_t errlen)
{
	int fd;

	if (rc)
		goto fail;
	if (a->out.fd >= 0) {
		fd = a->out.fd;
	} else if ((fd = cw_out_tmp(&a->out, err, errlen)) < 0) {
		rc = fd;
		goto fail;
	}
	if (!(a->f = fdopen(fd, "w"))) {
		rc = -errno;
		snprintf(err, errlen, "cannot write \"%s\": %s", a->out.path ? a->out.path : "?", strerror(-rc));
		if (fd != a->out.fd)
			close(fd);
		goto fail;
	}
	if (fd == a->out.fd)
		a->out.fd = -2; /* the FILE owns it; still "in place" for close */
	return 0;
fail:
	cw_out_release(&a->out);
	a->f = NULL;
	return rc;
}

int cw_atomic_open(struct cw_atomic_file *a, const char *path, const struct cw_out_rule *r, char *err,
		   size_t errlen)
{
	a->f = NULL;
	return finish_open(a, cw_out_resolve(&a->out, path, r, err, errlen), err, errlen);
}

int cw_atomic_open_beneath(struct cw_atomic_file *a, const char *dir, const char *path, const struct cw_out_rule *r,
			   char *err, size_t errlen)
{
	a->f = NULL;
	return finish_open(a, cw_out_resolve_beneath(&a->out, dir, path, r, err, errlen), err, errlen);
}

int cw_atomic_close(struct cw_atomic_file *a, int ok, char *err, size_t errlen)
{
	int rc = 0, in_place = a->out.fd == -2;

	if (!a->f)
		return 0;
	if (fclose(a->f) && ok) {
		rc = -EIO;
		snprintf(err, errlen, "cannot write \"%s\": %s", a->out.path ? a->out.path : "output", strerror(errno));
	}
	a->f = NULL;
	if (in_place)
		a->out.fd = -1;
	else if (ok && !rc)
		rc = cw_out_commit(&a->out, err, errlen);
	cw_out_release(&a->out);
	return rc;
}
