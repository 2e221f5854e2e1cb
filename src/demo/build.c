/* The demo database behind `causeway demo` and the MCP run_demo tool: a
 * scenario generated beside the target, renamed over it (util/out_path.h),
 * explained, and the chains stored. The generator is demo/gen.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "demo/build.h"
#include "demo/demo.h"
#include "store/store.h"
#include "util/log.h"
#include "util/out_path.h"
#include "util/timeutil.h"

/* Sessions of path that are not demo runs (traces, merged nodes). */
static int count_real_sessions(struct cw_store *st, int64_t *n)
{
	sqlite3_stmt *s;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "SELECT count(*) FROM sessions WHERE kind NOT LIKE 'demo:%'", -1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(st->db, rc);
	rc = sqlite3_step(s);
	*n = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 0 : cw_sqlite_db_errno(st->db, rc);
}

/* May the demo replace path? A missing file, or a causeway database that
 * holds demo runs only, that no causeway process is writing and whose
 * schema this build knows; force lifts the last three conditions, never
 * the first (a foreign file is left alone). On success *lock_fd holds the
 * file's exclusive lock (-1 when there is no file) until it is replaced.
 * Returns 0 or -errno with err filled. */
static int check_replaceable(const char *path, int force, int *lock_fd, char *err, size_t errlen)
{
	struct cw_store *st = NULL;
	struct stat sb;
	int64_t real = 0;
	int ret;

	*lock_fd = -1;
	if (stat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "refusing to replace \"%s\": not a regular file", path);
		return -EEXIST;
	}
	/* First, so that a trace that has not written its session row yet
	 * (a store locked at its start) is seen too. */
	ret = cw_store_lock_for_replace(path);
	if (ret == -EBUSY && !force) {
		snprintf(err, errlen,
			 "refusing to replace \"%s\": another causeway process (a trace) is writing it; "
			 "use another --db, or --force",
			 path);
		return ret;
	}
	if (ret == -EBUSY)
		cw_warn("replacing \"%s\" while another causeway process writes it (--force): "
			"its rows go to the replaced file", path);
	else if (ret < 0) {
		snprintf(err, errlen, "cannot lock \"%s\": %s", path, strerror(-ret));
		return ret;
	} else
		*lock_fd = ret;
	ret = cw_store_open(&st, path, CW_STORE_READONLY, err, errlen);
	if (ret == -ENOTSUP) {
		snprintf(err, errlen, "refusing to replace \"%s\": not a causeway database", path);
		return ret;
	}
	if (ret == -EPROTO && !force) {
		snprintf(err, errlen,
			 "refusing to replace \"%s\": its schema is newer than this causeway's (%d), "
			 "so it was written by a newer causeway; use --force to replace it anyway",
			 path, CW_SCHEMA_VERSION);
		return ret;
	}
	if (ret && ret != -EPROTO)
		return ret;
	if (st) {
		ret = count_real_sessions(st, &real);
		cw_store_close(st);
		if (ret) {
			snprintf(err, errlen, "cannot read \"%s\": %s", path, cw_store_strerror(ret));
			return ret;
		}
	}
	if (real > 0 && !force) {
		snprintf(err, errlen,
			 "refusing to replace \"%s\": it is not a demo database (%lld trace or merged "
			 "session%s); use --force to replace it",
			 path, (long long)real, real == 1 ? "" : "s");
		return -EEXIST;
	}
	return 0;
}

int cw_demo_build(const char *db, const struct cw_demo_opts *o, int now, int force,
		  struct cw_demo_result *res, struct cw_explain_result *ex, char *err, size_t errlen)
{
	struct cw_explain_opts eo = { 0 };
	struct cw_store *st = NULL;
	/* The output rule (util/out_path.h): a new name or a regular file,
	 * written beside and renamed; a link is written through. */
	struct cw_out_rule rule = { NULL, 0, CW_OUT_DB | CW_OUT_REPLACE };
	struct cw_out out;
	int ret, fd, lock_fd = -1;

	memset(ex, 0, sizeof(*ex));
	memset(&out, 0, sizeof(out));
	out.fd = out.dirfd = out.slot = -1;
	err[0] = '\0';
	if (strlen(db) >= 4096 - 32) {
		snprintf(err, errlen, "database path \"%.64s...\" is too long", db);
		return -E2BIG;
	}
	if ((ret = cw_out_resolve(&out, db, &rule, err, errlen)) ||
	    (ret = check_replaceable(out.path, force, &lock_fd, err, errlen)) < 0) {
		if (lock_fd >= 0)
			close(lock_fd);
		if (!err[0])
			snprintf(err, errlen, "cannot use \"%s\": %s", db, cw_store_strerror(ret));
		cw_out_release(&out);
		return ret;
	}
	/* Build the new database beside the old one, then rename it over:
	 * readers never see a half-written demo. */
	if ((fd = cw_out_tmp(&out, err, errlen)) < 0) {
		ret = fd;
		goto out;
	}
	close(fd);
	if (!out.tmp_path) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = cw_store_open(&st, out.tmp_path, CW_STORE_CREATE, err, errlen)) < 0)
		goto out;
	ret = cw_demo_generate(st, o, res);
	cw_store_close(st);
	st = NULL;
	if (ret < 0) {
		snprintf(err, errlen, "demo \"%s\": writing \"%s\" failed: %s", o->scenario->name, db,
			 cw_store_strerror(ret));
		if (ret == -EPROTO) /* records refused: the generator's fault, not the file's */
			ret = -EBADMSG;
		goto out;
	}
	/* The old file's WAL goes first, the new one's comes along. */
	if ((ret = cw_out_commit(&out, err, errlen)) < 0)
		goto out;
	/* The old file is gone: its lock protected the replacement only. */
	if (lock_fd >= 0)
		close(lock_fd);
	lock_fd = -1;

	if ((ret = cw_store_open(&st, out.path, CW_STORE_READWRITE, err, errlen)) < 0)
		goto out;
	ret = cw_explain_run(st->db, &eo, ex);
	if (ret < 0) {
		snprintf(err, errlen, "explain on \"%s\" failed: %s", db, cw_store_strerror(ret));
		goto out;
	}
	/* Chains are history: keep this diagnosis in the store, stamped at the
	 * end of the synthetic run so the database stays reproducible. */
	ret = cw_explain_store_chains(st->db, ex, now ? cw_realtime_ns() : res->end_wall_ns);
	if (ret < 0) {
		snprintf(err, errlen, "storing chains in \"%s\" failed: %s", db, cw_store_strerror(ret));
		goto out;
	}
	ret = 0;
out:
	if (ret) {
		cw_explain_result_free(ex);
		memset(ex, 0, sizeof(*ex));
	}
	if (lock_fd >= 0)
		close(lock_fd);
	cw_store_close(st);
	cw_out_release(&out);
	return ret;
}

