/* The one rule for the files causeway writes (export, merge, demo, the MCP
 * export_timeline tool):
 *  - a new name or an existing regular file is written to a temporary file
 *    beside it (NAME.tmp-XXXXXX) and renamed over it when complete;
 *  - a character device, a FIFO or a /proc/PID/fd/N link is written in
 *    place (opened O_WRONLY, never created or truncated) when the caller
 *    allows streams, else refused; a directory, socket or block device is
 *    refused;
 *  - a symbolic link is written through: its target is what gets replaced,
 *    the link stays; only links owned by the caller or root are followed
 *    (a link planted by another user in a shared directory is refused);
 *  - an output that is one of the inputs (same device and inode, through
 *    links; with each input's -wal, -shm and -journal) is refused;
 *  - the temporary file is removed on SIGINT, SIGTERM and SIGHUP.
 * cw_out_resolve_beneath is the confined form for paths chosen by someone
 * else (an AI assistant over MCP): inside one directory, no "..", no
 * symbolic link anywhere, nothing but new or regular files. */
#ifndef CW_UTIL_OUT_PATH_H
#define CW_UTIL_OUT_PATH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define CW_OUT_REPLACE 0x1u /* an existing regular file may be replaced */
#define CW_OUT_STREAM 0x2u  /* a character device, FIFO or /proc/PID/fd/N is written in place */
#define CW_OUT_DB 0x4u      /* an SQLite database: its -wal, -shm and -journal belong to it */

struct cw_out_rule {
	const char *const *inputs; /* files the output must not be; read again at the commit, so they
				    * must live until the output is closed */
	int ninputs;
	unsigned flags;
};

struct cw_out {
	int fd;        /* >= 0: written in place on this descriptor (cw_out_tmp is not used) */
	int dirfd;     /* the directory that holds the final name */
	char *dir;     /* its path, as reached */
	char *path;    /* dir/name: the file that is replaced or created */
	char *tmp_path; /* dir/tmp while a temporary file exists */
	char name[NAME_MAX + 1];
	char tmp[NAME_MAX + 1];
	unsigned flags;
	const char *const *inputs;
	int ninputs;
	int slot; /* signal-cleanup registration, -1: none */
};

/* Applies the rule to path. Returns 0 (o ready: o->fd >= 0 for in place,
 * else call cw_out_tmp) or -errno with one sentence in err:
 *   -EEXIST  the output exists and CW_OUT_REPLACE is not set
 *   -EINVAL  the output is an input, or a kind of file the rule refuses
 *   -EISDIR, -EPERM (a link owned by another user), -ELOOP, or what lstat
 *            and open said. o is always safe to pass to cw_out_release. */
int cw_out_resolve(struct cw_out *o, const char *path, const struct cw_out_rule *r, char *err, size_t errlen);

/* The confined form: path is relative to dir, or absolute inside it. The
 * directory is created (0700) when missing. Refused with -EACCES: "..",
 * a path outside dir, a symbolic link in any component; -EEXIST: an
 * existing file without CW_OUT_REPLACE; -EINVAL: not a regular file, or
 * an input. */
int cw_out_resolve_beneath(struct cw_out *o, const char *dir, const char *path, const struct cw_out_rule *r,
			   char *err, size_t errlen);

/* Creates the temporary file beside the target (mode 0666 & ~umask) and
 * registers it for removal on a signal. Returns its descriptor or -errno. */
int cw_out_tmp(struct cw_out *o, char *err, size_t errlen);

/* Renames the temporary file over the target, after checking the target
 * again (still absent, or a regular file that is no input; never replaced
 * without CW_OUT_REPLACE). With CW_OUT_DB the replaced file's -wal and
 * -shm go first. Returns 0 or -errno with err filled. */
int cw_out_commit(struct cw_out *o, char *err, size_t errlen);

/* Removes a temporary file that was not committed, closes what o holds. */
void cw_out_release(struct cw_out *o);

#endif
