/* The bearer token a server makes for itself when none is configured, as
 * Jupyter does: random, kept in a file only its owner can read, where the
 * CLI and the fleet client find it (~/.causeway/token), and reused on the
 * next start so that clients keep working across restarts.
 *
 * The file is never followed through a link, never taken when it is not a
 * regular file of ours that no one else may read, and never replaced: a new
 * one is written under a temporary name and linked into place, which fails
 * rather than overwrite whatever appeared there meanwhile. */
#define _GNU_SOURCE
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN_BYTES 32
#define TOKEN_MIN_LEN 16
#define TOKEN_MAX_LEN 4096

int cw_token_default_path(const char *db_path, char *buf, size_t len)
{
	const char *home = getenv("HOME"), *slash;
	int n;

	if (home && *home) {
		n = snprintf(buf, len, "%s/.causeway/token", home);
	} else if (db_path) {
		/* No home (a system service): beside the database, as the
		 * generated certificate is. */
		slash = strrchr(db_path, '/');
		n = snprintf(buf, len, "%.*s/causeway-token", slash ? (int)(slash - db_path) : 1,
			     slash ? db_path : ".");
	} else {
		return -ENOENT;
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Printable ASCII without spaces: what goes into a header unchanged. */
static int token_valid(const char *t, size_t n)
{
	if (n < TOKEN_MIN_LEN || n > TOKEN_MAX_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (t[i] <= ' ' || t[i] > '~')
			return 0;
	return 1;
}

/* Reads the token of an existing file. -ENOENT when there is none. */
static int read_private(const char *path, char **out, char *err, size_t errlen)
{
	char buf[TOKEN_MAX_LEN + 2];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP)
			snprintf(err, errlen, "token file \"%s\" is a symbolic link; refusing it", path);
		else if (rc != -ENOENT)
			snprintf(err, errlen, "cannot read token file \"%s\": %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "cannot read token file \"%s\": %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "token file \"%s\" is not a regular file; refusing it", path);
		rc = -EINVAL;
		goto out;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "token file \"%s\" belongs to uid %u, not to this user; refusing it", path,
			 (unsigned)st.st_uid);
		rc = -EPERM;
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen,
			 "token file \"%s\" can be read by other users (mode %04o); refusing it: chmod 600 it, or "
			 "remove it and a new one is made", path, (unsigned)(st.st_mode & 07777));
		rc = -EPERM;
		goto out;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read token file \"%s\": %s", path, strerror(errno));
		goto out;
	}
	buf[n] = 0;
	len = strcspn(buf, "\r\n");
	if (!token_valid(buf, len) || (size_t)n > len + 2) {
		snprintf(err, errlen,
			 "token file \"%s\" does not hold one token line (%d to %d printable characters); "
			 "remove it and a new one is made", path, TOKEN_MIN_LEN, TOKEN_MAX_LEN);
		rc = -EINVAL;
		goto out;
	}
	if (!(*out = strndup(buf, len)))
		rc = -ENOMEM;
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return rc;
}

static int write_new(const char *path, char **out, char *err, size_t errlen)
{
	unsigned char rnd[TOKEN_BYTES];
	char tok[TOKEN_BYTES * 2 + 2], tmp[4200], *dir, *slash;
	size_t off = 0;
	ssize_t w;
	int fd, rc = 0;

	/* The directory: made private when it is new (~/.causeway). */
	if ((dir = strdup(path)) && (slash = strrchr(dir, '/')) && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0700) && errno != EEXIST) {
			snprintf(err, errlen, "cannot create \"%s\" for the token file: %s", dir, strerror(errno));
			free(dir);
			return -errno;
		}
	}
	free(dir);
	if (gnutls_rnd(GNUTLS_RND_KEY, rnd, sizeof(rnd)) < 0) {
		snprintf(err, errlen, "cannot draw random bytes for a token");
		return -EIO;
	}
	for (int i = 0; i < TOKEN_BYTES; i++)
		snprintf(tok + 2 * i, 3, "%02x", rnd[i]);
	explicit_bzero(rnd, sizeof(rnd));
	tok[TOKEN_BYTES * 2] = '\n';
	tok[TOKEN_BYTES * 2 + 1] = 0;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "token file path \"%s\" is too long", path);
		return -ENAMETOOLONG;
	}
	fd = mkostemp(tmp, O_CLOEXEC); /* 0600, O_EXCL: a new file of ours */
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create the token file \"%s\": %s", path, strerror(errno));
		goto out;
	}
	while (!rc && off < TOKEN_BYTES * 2 + 1) {
		w = write(fd, tok + off, TOKEN_BYTES * 2 + 1 - off);
		if (w < 0 && errno != EINTR)
			rc = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!rc && fsync(fd))
		rc = -errno;
	close(fd);
	/* link() never replaces: another server that made the file first wins,
	 * and its token is read back below. */
	if (!rc && link(tmp, path))
		rc = -errno;
	unlink(tmp);
	if (rc == -EEXIST) {
		rc = read_private(path, out, err, errlen);
		goto out;
	}
	if (rc) {
		snprintf(err, errlen, "cannot write the token file \"%s\": %s", path, strerror(-rc));
		goto out;
	}
	tok[TOKEN_BYTES * 2] = 0;
	if (!(*out = strdup(tok)))
		rc = -ENOMEM;
	else
		rc = 1;
out:
	explicit_bzero(tok, sizeof(tok));
	return rc;
}

char *cw_token_load_or_create(const char *path, int *created, char *err, size_t errlen)
{
	char *tok = NULL;
	int rc;

	*created = 0;
	rc = read_private(path, &tok, err, errlen);
	if (rc == -ENOENT) {
		rc = write_new(path, &tok, err, errlen);
		*created = rc == 1;
	}
	if (rc < 0) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return tok;
}

char *cw_token_read_default(char *err, size_t errlen)
{
	char path[4096], *tok = NULL;

	*err = 0;
	if (cw_token_default_path(NULL, path, sizeof(path)))
		return NULL;
	if (read_private(path, &tok, err, errlen) == -ENOENT)
		*err = 0;
	return tok;
}
