#define _GNU_SOURCE /* statx */
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store/migrate.h"
#include "store/ro_guard.h"

const char *cw_store_strerror(int code)
{
	if (code == -ENOSPC || code == -EDQUOT)
		return "disk full (no space left on device)";
	if (code == -EROFS)
		return "read-only filesystem";
	return strerror(code < 0 ? -code : code);
}

static void describe(char *err, size_t errlen, const char *path, int code, int found)
{
	switch (code) {
	case -ENOENT:
		snprintf(err, errlen, "database \"%s\" does not exist", path);
		break;
	case -ENOTSUP:
		snprintf(err, errlen, "\"%s\" is not a causeway database (corrupt or another format)", path);
		break;
	case -EBUSY:
		snprintf(err, errlen, "database \"%s\" is locked by another process; try again when it finishes", path);
		break;
	case -EPROTO:
		if (found < 0)
			snprintf(err, errlen, "database \"%s\" has unknown schema version %d (not a causeway database)",
				 path, found);
		else if (found < CW_SCHEMA_MIN_READ_VERSION)
			snprintf(err, errlen, "database \"%s\" has schema version %d, older than this causeway reads (%d)",
				 path, found, CW_SCHEMA_MIN_READ_VERSION);
		else
			snprintf(err, errlen,
				 "database \"%s\" has schema version %d, newer than this causeway reads (%d); upgrade "
				 "causeway",
				 path, found, CW_SCHEMA_VERSION);
		break;
	case -EACCES:
		snprintf(err, errlen, "database \"%s\": permission denied", path);
		break;
	case -EISDIR:
		snprintf(err, errlen, "database \"%s\" is a directory", path);
		break;
	case -ESPIPE:
		snprintf(err, errlen, "database \"%s\" is not a regular file (a FIFO, socket or device)", path);
		break;
	case -ENOSPC:
		snprintf(err, errlen, "database \"%s\": disk full (no space left on its filesystem)", path);
		break;
	case -EROFS:
		snprintf(err, errlen, "database \"%s\" is on a read-only filesystem", path);
		break;
	case -EUCLEAN:
		snprintf(err, errlen,
			 "database \"%s\" is on a read-only filesystem with an unmerged write-ahead log "
			 "(\"%s-wal\"); copy both files to a writable place to read it",
			 path, path);
		break;
	case -EXDEV:
		snprintf(err, errlen,
			 "database \"%s\": its write-ahead log \"%s-wal\" does not match it (another database's "
			 "log, or one left without its \"-shm\" index), and replaying it could rewrite the file; "
			 "move \"%s-wal\" away if it is not this database's",
			 path, path, path);
		break;
	default:
		snprintf(err, errlen, "database \"%s\": %s", path, strerror(-code));
	}
}

/* A causeway file has our tables; an SQLite file of some other program
 * must not be migrated into one. */
static int looks_foreign(sqlite3 *db)
{
	sqlite3_stmt *st;
	int n = 0, ours = 0, rc;

	rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		n++;
		if (name && strcmp(name, "events") == 0)
			ours = 1;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	return n > 0 && !ours;
}

/* Readers of kernel-side events read kevents (schema v7); in an older
 * file read as it is, those rows are in the events table: a temporary
 * view of the same name (the temp schema is the connection's own, so a
 * read-only file is not touched). */
static int older_events_alias(sqlite3 *db)
{
	int err = cw_exec(db, "PRAGMA query_only = 0");

	if (!err)
		err = cw_exec(db, "CREATE TEMP VIEW IF NOT EXISTS kevents AS SELECT * FROM main.events");
	if (!err)
		err = cw_exec(db, "PRAGMA query_only = 1");
	return err;
}

/* A file before v8, read as it is: a temp view (searched before main)
 * gives its py_stacks the python_via column, from the frames' marker. */
static int older_pyvia_alias(sqlite3 *db)
{
	int err = cw_exec(db, "PRAGMA query_only = 0");

	if (!err)
		err = cw_exec(db, "CREATE TEMP VIEW IF NOT EXISTS py_stacks AS SELECT *, " CW_PYVIA_FROM_FRAMES(
					  "frames") " AS python_via FROM main.py_stacks");
	if (!err)
		err = cw_exec(db, "PRAGMA query_only = 1");
	return err;
}

static int configure(sqlite3 *db, enum cw_store_mode mode, int page_size)
{
	char sql[48];
	int err;

	sqlite3_busy_timeout(db, 2000);
	if (mode == CW_STORE_READONLY)
		return cw_exec(db, "PRAGMA query_only = 1");
	/* WAL keeps readers (explain, serve) running while trace writes, and
	 * survives SIGKILL of the writer: committed batches stay, the open one
	 * is rolled back. NORMAL sync in WAL mode is durable to the last
	 * checkpoint and consistent always. */
	/* 16 KiB pages for new files (a no-op on existing ones) unless the
	 * creator asks otherwise (cw_store_create): a quarter of the WAL
	 * frames, write() calls and page splits of 4 KiB pages for the
	 * append-mostly events table, measured ~10% faster ingest. Must come
	 * before the switch to WAL, which fixes the page size. */
	snprintf(sql, sizeof(sql), "PRAGMA page_size = %d", page_size > 0 ? page_size : CW_STORE_PAGE_SIZE);
	err = cw_exec(db, sql);
	if (!err)
		err = cw_exec(db, "PRAGMA journal_mode = WAL");
	if (!err)
		err = cw_exec(db, "PRAGMA synchronous = NORMAL");
	if (!err)
		err = cw_exec(db, "PRAGMA foreign_keys = OFF");
	/* 64 MiB of page cache keeps the events index's hot pages resident
	 * under a sustained insert stream. */
	if (!err)
		err = cw_exec(db, "PRAGMA cache_size = -65536");
	return err;
}

/* SQLite's memory statistics take a global mutex on every allocation; the
 * writer allocates per row, and causeway never reads those statistics.
 * Must run before SQLite initializes, hence once, before the first open. */
static void configure_sqlite_once(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	/* User statements' memory bound (ro_heap.c), set the same way. */
	cw_ro_heap_install();
}

/* Process-wide SQLite settings; cw_store_open calls it before its first
 * open. */
static void cw_sqlite_global_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, configure_sqlite_once);
}

static int on_readonly_fs(const char *path)
{
	struct statvfs vfs;

	return statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
}

/* A -wal file with frames in it holds committed rows the main file lacks. */
static int wal_has_frames(const char *path)
{
	char wal[4200];
	struct stat sb;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	return stat(wal, &sb) == 0 && sb.st_size > 0;
}

static int read_at(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* 1 when the -shm index was made after the log's last write: a reader
 * built it from a log no writer of this file wrote (a writer makes its
 * index before its first frame). Unknown birth times count as 0. */
static int index_after_log(const char *idx, const char *wal)
{
	struct statx si, sw;

	if (statx(AT_FDCWD, idx, 0, STATX_BTIME, &si) || !(si.stx_mask & STATX_BTIME) ||
	    statx(AT_FDCWD, wal, 0, STATX_MTIME, &sw) || !(sw.stx_mask & STATX_MTIME))
		return 0;
	if (si.stx_btime.tv_sec != sw.stx_mtime.tv_sec)
		return si.stx_btime.tv_sec > sw.stx_mtime.tv_sec;
	return si.stx_btime.tv_nsec > sw.stx_mtime.tv_nsec;
}

/* Whether path's -wal can be replayed into it. SQLite keeps nothing in a
 * database that names its log: a -wal beside the file is taken as its
 * own, and a writer's checkpoint copies its pages in, so a file copied
 * next to another database's log is rewritten and corrupt (a reader,
 * opened SQLITE_OPEN_READONLY, never checkpoints). What can be checked:
 * a log with frames (its first frame carries the header's salts) must
 * have the file's page size, and when the "-shm" index is there, settled
 * (its two header copies equal) and initialized, the salts it recorded
 * must be the log's. A writer (trace, explain storing chains) also
 * refuses a log with frames and no index, or an index a reader built
 * after the log was written: nothing ties that log to the file.
 * Returns 0 or -EXDEV. A live writer may restart its log between two
 * reads here, so a mismatch is looked at again before it counts. */
static int wal_foreign(const char *path, enum cw_store_mode mode)
{
	unsigned char db[100], wh[32], fh[24], shm[96];
	enum { MATCH, OTHER, NO_INDEX } seen = OTHER;
	char wal[4200], idx[4200];
	uint32_t dbpage, walpage, frames;
	int tries;

	snprintf(wal, sizeof(wal), "%s-wal", path);
	snprintf(idx, sizeof(idx), "%s-shm", path);
	for (tries = 0; tries < 5 && seen != MATCH; tries++) {
		if (tries)
			usleep(20000);
		if (read_at(wal, wh, sizeof(wh), 0) || read_at(wal, fh, sizeof(fh), 32))
			return 0; /* no log, or no frame in it */
		if ((be32(wh) & ~1u) != 0x377f0682 || memcmp(fh + 8, wh + 16, 8))
			return 0; /* SQLite ignores it */
		if (read_at(path, db, sizeof(db), 0))
			return 0; /* an empty or short file: SQLite decides */
		dbpage = (uint32_t)db[16] << 8 | db[17];
		walpage = be32(wh + 8);
		if (walpage != (dbpage == 1 ? 65536 : dbpage)) {
			seen = OTHER;
			continue;
		}
		/* struct WalIndexHdr, native byte order: isInit at 12,
		 * mxFrame at 16, aSalt at 32; two copies of 48 bytes. */
		seen = NO_INDEX;
		if (read_at(idx, shm, sizeof(shm), 0) || !shm[12])
			break;
		if (memcmp(shm, shm + 48, 48))
			continue; /* being written */
		memcpy(&frames, shm + 16, sizeof(frames));
		/* An index with no frame makes readers ignore the log. */
		seen = !frames || !memcmp(shm + 32, wh + 16, 8) ? MATCH : OTHER;
		if (seen == MATCH && mode != CW_STORE_READONLY && index_after_log(idx, wal))
			seen = NO_INDEX;
	}
	if (seen == MATCH || (seen == NO_INDEX && mode == CW_STORE_READONLY))
		return 0;
	return -EXDEV;
}

/* 1 when this process already has path, its -wal or its -shm open (an
 * SQLite connection: trace's writer beside the API it serves, a server's
 * other readers). wal_foreign's own open() and close() of those files
 * would then drop every POSIX lock the process holds on them (fcntl locks
 * belong to the process, and any close releases them), and a connection
 * that believes itself alone reinitializes the -shm under the others'
 * mappings (SIGBUS). Such a file is one this process already checked. */
static int open_in_process(const char *path)
{
	char side[4200];
	struct stat want[3], fs;
	int nwant = 0, dfd, found = 0;
	DIR *d;
	struct dirent *e;

	if (stat(path, &want[nwant]) == 0)
		nwant++;
	snprintf(side, sizeof(side), "%s-wal", path);
	if (stat(side, &want[nwant]) == 0)
		nwant++;
	snprintf(side, sizeof(side), "%s-shm", path);
	if (stat(side, &want[nwant]) == 0)
		nwant++;
	if (!nwant || !(d = opendir("/proc/self/fd")))
		return 0;
	dfd = dirfd(d);
	while (!found && (e = readdir(d))) {
		int fd = (int)strtol(e->d_name, NULL, 10);

		if (e->d_name[0] == '.' || fd == dfd || fstat(fd, &fs))
			continue;
		for (int i = 0; i < nwant && !found; i++)
			found = fs.st_dev == want[i].st_dev && fs.st_ino == want[i].st_ino;
	}
	closedir(d);
	return found;
}

/* Serializes wal_foreign's reads with the opens of this process's other
 * threads, so that a connection being opened is either visible to
 * open_in_process or not yet holding a lock. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

/* The "file:" URI of path (SQLITE_OPEN_URI), with the characters a URI
 * gives a meaning to escaped, and query appended. */
static int uri_of(char *out, size_t len, const char *path, const char *query)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	const unsigned char *p;

	if (len < 6)
		return -ENAMETOOLONG;
	memcpy(out, "file:", 5);
	o = 5;
	for (p = (const unsigned char *)path; *p; p++) {
		if (o + 4 >= len)
			return -ENAMETOOLONG;
		if (*p == '%' || *p == '?' || *p == '#' || *p < 0x20 || *p >= 0x7f) {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		} else {
			out[o++] = (char)*p;
		}
	}
	if (o + strlen(query) + 2 >= len)
		return -ENAMETOOLONG;
	snprintf(out + o, len - o, "?%s", query);
	return 0;
}

/* Opens path and checks that it is ours; SQLite opens lazily, so the
 * first read is where a missing -shm or a full disk shows. Returns 0 or
 * -errno, with *dbp set either way (closed by the caller). */
static int try_open(sqlite3 **dbp, const char *path, enum cw_store_mode mode, int immutable)
{
	char uri[4400];
	int flags, rc;

	*dbp = NULL;
	if (mode == CW_STORE_READONLY)
		flags = SQLITE_OPEN_READONLY;
	else if (mode == CW_STORE_READWRITE)
		flags = SQLITE_OPEN_READWRITE;
	else
		flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	rc = uri_of(uri, sizeof(uri), path, immutable ? "immutable=1" : mode == CW_STORE_READONLY ? "mode=ro" : "");
	if (rc)
		return rc;
	rc = sqlite3_open_v2(uri, dbp, flags | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(*dbp, rc);
	sqlite3_extended_result_codes(*dbp, 0);
	/* The first read below may meet another connection's WAL recovery or
	 * checkpoint: wait for it as every later statement does. */
	sqlite3_busy_timeout(*dbp, 2000);
	rc = looks_foreign(*dbp);
	if (rc < 0)
		return cw_sqlite_db_errno(*dbp, sqlite3_errcode(*dbp)) ?: rc;
	return rc > 0 ? -ENOTSUP : 0;
}

/* SQLite says "cannot open" for a file that exists but whose side files
 * (-shm, -wal) cannot be made: name the real cause. */
static int open_cause(const char *path, int exists, enum cw_store_mode mode, int code)
{
	char dir[4200], *slash;

	if (exists && access(path, R_OK) != 0)
		return -EACCES;
	if (exists && on_readonly_fs(path))
		return -EROFS;
	if (exists)
		return code == -ENOENT ? -EACCES : code;
	if (mode != CW_STORE_CREATE)
		return code;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	return on_readonly_fs(dir) ? -EROFS : -EACCES;
}

static int open_store(struct cw_store **out, const char *path, enum cw_store_mode mode, int page_size, char *err,
		      size_t errlen);

int cw_store_open(struct cw_store **out, const char *path, enum cw_store_mode mode,
		  char *err, size_t errlen)
{
	return open_store(out, path, mode, 0, err, errlen);
}

int cw_store_create(struct cw_store **out, const char *path, int page_size, char *err, size_t errlen)
{
	return open_store(out, path, CW_STORE_CREATE, page_size, err, errlen);
}

static int open_store(struct cw_store **out, const char *path, enum cw_store_mode mode, int page_size, char *err,
		      size_t errlen)
{
	struct cw_store *st = NULL;
	struct stat sb;
	int code = 0, found = 0, v = 0, exists, wfd = -1;
	sqlite3 *db = NULL;

	*out = NULL;
	cw_sqlite_global_init();
	if (!path)
		path = CW_DEFAULT_DB;
	if (!*path) {
		snprintf(err, errlen, "the database path is empty");
		return -EINVAL;
	}
	exists = stat(path, &sb) == 0;
	if (exists && S_ISDIR(sb.st_mode)) {
		code = -EISDIR;
		goto fail;
	}
	/* SQLite's open() of a FIFO blocks until a writer comes, and a device
	 * or socket is no database: refused before anything opens them. */
	if (exists && !S_ISREG(sb.st_mode)) {
		code = -ESPIPE;
		goto fail;
	}
	if (!exists && mode != CW_STORE_CREATE) {
		code = -ENOENT;
		goto fail;
	}
	pthread_mutex_lock(&open_lock);
	code = open_in_process(path) ? 0 : wal_foreign(path, mode);
	if (!code)
		code = try_open(&db, path, mode, 0);
	pthread_mutex_unlock(&open_lock);
	if (code && code != -ENOTSUP && exists && mode == CW_STORE_READONLY && on_readonly_fs(path)) {
		/* A WAL reader needs the -shm file, which SQLite cannot create
		 * on a read-only filesystem. Nothing can write there either, so
		 * the file is immutable: read it as such, unless committed rows
		 * wait in a -wal file that an immutable reader would skip. */
		sqlite3_close_v2(db);
		db = NULL;
		code = wal_has_frames(path) ? -EUCLEAN : try_open(&db, path, mode, 1);
	}
	/* SQLite quietly opens a file it cannot write read-only. */
	if (!code && mode != CW_STORE_READONLY && sqlite3_db_readonly(db, "main") == 1)
		code = on_readonly_fs(path) ? -EROFS : -EACCES;
	if (code == -ENOENT || code == -EACCES || code == -EIO)
		code = open_cause(path, exists, mode, code);
	if (code)
		goto fail;
	code = configure(db, mode, page_size);
	if (code)
		goto fail;
	if (mode == CW_STORE_READONLY) {
		code = cw_schema_version(db, &v);
		if (!code && v > CW_SCHEMA_VERSION) {
			found = v;
			code = -EPROTO;
		} else if (!code && v < CW_SCHEMA_MIN_READ_VERSION) {
			/* An empty file read-only: nothing to read. */
			code = v == 0 ? -ENOTSUP : -EPROTO;
			found = v;
		}
	} else {
		code = cw_migrate(db, &found);
	}
	if (!code && mode == CW_STORE_READONLY && v < 7)
		code = older_events_alias(db);
	if (!code && mode == CW_STORE_READONLY && v < 8)
		code = older_pyvia_alias(db);
	if (code)
		goto fail;
	if (mode != CW_STORE_READONLY) {
		/* Shared among writers (trace, explain, merge); a demo replacing
		 * the file holds it exclusively. */
		wfd = open(path, O_RDONLY | O_CLOEXEC);
		if (wfd >= 0 && flock(wfd, LOCK_SH | LOCK_NB) != 0) {
			code = errno == EWOULDBLOCK ? -EBUSY : -errno;
			if (code == -EBUSY) {
				close(wfd);
				sqlite3_close_v2(db);
				snprintf(err, errlen,
					 "database \"%s\" is being replaced by causeway demo; try again when it finishes",
					 path);
				return code;
			}
			goto fail;
		}
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		code = -ENOMEM;
		goto fail;
	}
	st->db = db;
	st->mode = mode;
	st->writer_fd = wfd;
	*out = st;
	return 0;
fail:
	if (wfd >= 0)
		close(wfd);
	if (db)
		sqlite3_close_v2(db);
	describe(err, errlen, path, code, found);
	return code;
}

void cw_store_remove_files(const char *path)
{
	static const char *const sides[] = { "-wal", "-shm", "-journal" };
	char side[4200];
	size_t i;

	unlink(path);
	for (i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		snprintf(side, sizeof(side), "%s%s", path, sides[i]);
		unlink(side);
	}
}

void cw_store_close(struct cw_store *st)
{
	if (!st)
		return;
	sqlite3_close_v2(st->db);
	if (st->writer_fd >= 0)
		close(st->writer_fd);
	free(st->path);
	free(st);
}

int cw_store_open_reader(sqlite3 **db, const char *path, char *err, size_t errlen)
{
	struct cw_store *st;
	int rc;

	*db = NULL;
	if ((rc = cw_store_open(&st, path, CW_STORE_READONLY, err, errlen)))
		return rc;
	*db = st->db;
	st->db = NULL;
	cw_store_close(st);
	return 0;
}

int cw_store_lock_for_replace(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err; /* a FIFO must not block */

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return err;
	}
	return fd;
}

int64_t cw_store_size_bytes(struct cw_store *st)
{
	char wal[4096];
	struct stat sb;
	int64_t total = 0;

	if (stat(st->path, &sb) == 0)
		total += sb.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", st->path);
	if (stat(wal, &sb) == 0)
		total += sb.st_size;
	return total;
}

char *cw_meta_get(sqlite3 *db, const char *key)
{
	sqlite3_stmt *st;
	char *v = NULL;

	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

int cw_meta_set(sqlite3 *db, const char *key, const char *value)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}
