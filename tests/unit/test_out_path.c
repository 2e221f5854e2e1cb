/* The output-file rule (util/out_path.h) over a table of file kinds, each
 * made in a temporary directory: what is renamed over, what is written in
 * place, what is refused; then the commit's second look, the confined
 * form MCP uses, and the temporary file removed on a signal. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/out_path.h"

static char dir[64];

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

static void put(const char *name, const char *text)
{
	char p[256];
	FILE *f;

	path_of(p, sizeof(p), name);
	assert_non_null(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *name, const char *target)
{
	char p[256];

	path_of(p, sizeof(p), name);
	assert_int_equal(symlink(target, p), 0);
}

/* 1: made; 0: this machine cannot (not root), the row is skipped. */
static int make_node(const char *name, mode_t mode, dev_t dev)
{
	char p[256];

	path_of(p, sizeof(p), name);
	return mknod(p, mode, dev) == 0;
}

static int tmp_count(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".tmp-") != NULL;
	if (d)
		closedir(d);
	return n;
}

static int setup(void **state)
{
	char p[256];
	int s;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cw-outpath-XXXXXX");
	assert_non_null(mkdtemp(dir));
	put("in.db", "database");
	put("in.db-wal", "wal");
	put("old.json", "old");
	put("subdir-file", "x");
	path_of(p, sizeof(p), "in.db");
	{
		char h[256];

		path_of(h, sizeof(h), "hard.db");
		assert_int_equal(link(p, h), 0);
	}
	link_to("link-in", "in.db");
	link_to("link-old", "old.json");
	link_to("link-abs-old", p); /* absolute, through two hops below */
	link_to("link-link", "link-old");
	link_to("dangling", "created-through.json");
	link_to("loop-a", "loop-b");
	link_to("loop-b", "loop-a");
	path_of(p, sizeof(p), "d");
	assert_int_equal(mkdir(p, 0755), 0);
	link_to("link-dir", "d");
	path_of(p, sizeof(p), "fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	path_of(sa.sun_path, sizeof(sa.sun_path), "sock");
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	make_node("null", S_IFCHR | 0666, makedev(1, 3));
	link_to("link-null", "null");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

enum want { RENAME, IN_PLACE, REFUSED };

struct row {
	const char *path; /* relative to dir, or absolute when it starts with '/' */
	unsigned flags;
	enum want want;
	int err;            /* for REFUSED */
	const char *target; /* for RENAME: the name that is replaced or created */
	int needs_node;     /* the mknod'ed device: skipped when it could not be made */
};

#define R CW_OUT_REPLACE
#define S CW_OUT_STREAM
static const struct row rows[] = {
	{ "new.json", R | S, RENAME, 0, "new.json", 0 },
	{ "old.json", R | S, RENAME, 0, "old.json", 0 },
	{ "old.json", S, REFUSED, EEXIST, NULL, 0 },
	/* the database itself, by name, link, hard link, and its WAL, present or to come */
	{ "in.db", R | S, REFUSED, EINVAL, NULL, 0 },
	{ "link-in", R | S, REFUSED, EINVAL, NULL, 0 },
	{ "hard.db", R | S, REFUSED, EINVAL, NULL, 0 },
	{ "in.db-wal", R | S, REFUSED, EINVAL, NULL, 0 },
	{ "in.db-shm", R | S, REFUSED, EINVAL, NULL, 0 },
	{ "in.db-journal", R | S, REFUSED, EINVAL, NULL, 0 },
	{ "./d/../in.db", R | S, REFUSED, EINVAL, NULL, 0 },
	/* links are written through: the target is replaced, the link stays */
	{ "link-old", R | S, RENAME, 0, "old.json", 0 },
	{ "link-link", R | S, RENAME, 0, "old.json", 0 },
	{ "dangling", R | S, RENAME, 0, "created-through.json", 0 },
	{ "link-abs-old", R | S, REFUSED, EINVAL, NULL, 0 }, /* points at in.db */
	{ "loop-a", R | S, REFUSED, ELOOP, NULL, 0 },
	{ "link-dir", R | S, REFUSED, EISDIR, NULL, 0 },
	{ "d", R | S, REFUSED, EISDIR, NULL, 0 },
	{ "d/", R | S, REFUSED, EISDIR, NULL, 0 },
	{ "missing-dir/x.json", R | S, REFUSED, ENOENT, NULL, 0 },
	/* never renamed over: written in place when streams are allowed */
	{ "fifo", R | S, IN_PLACE, 0, NULL, 0 },
	{ "fifo", R, REFUSED, EINVAL, NULL, 0 },
	{ "sock", R | S, REFUSED, EINVAL, NULL, 0 },
	{ "null", R | S, IN_PLACE, 0, NULL, 1 },
	{ "link-null", R | S, IN_PLACE, 0, NULL, 1 },
	{ "null", R | CW_OUT_DB, REFUSED, EINVAL, NULL, 1 },
	{ "/dev/stdout", R | S, IN_PLACE, 0, NULL, 0 },
	{ "/dev/stdout", R | CW_OUT_DB, REFUSED, EINVAL, NULL, 0 },
};

static void rule_table(void **state)
{
	const char *inputs[2];
	char in[256], p[256], want_path[256], err[512];
	struct stat st;

	(void)state;
	path_of(in, sizeof(in), "in.db");
	inputs[0] = in;
	inputs[1] = "/nonexistent/input.db";
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		struct cw_out_rule rule = { inputs, 2, w->flags };
		struct cw_out o;
		int rc, rdr = -1;

		if (w->needs_node && (lstat((path_of(p, sizeof(p), "null"), p), &st) || !S_ISCHR(st.st_mode)))
			continue;
		if (w->path[0] == '/')
			snprintf(p, sizeof(p), "%s", w->path);
		else
			path_of(p, sizeof(p), w->path);
		if (!strcmp(w->path, "fifo")) /* a reader, so the open does not wait */
			rdr = open(p, O_RDONLY | O_NONBLOCK);
		err[0] = '\0';
		rc = cw_out_resolve(&o, p, &rule, err, sizeof(err));
		print_message("%-22s flags %u: rc %d %s\n", w->path, w->flags, rc, err);
		switch (w->want) {
		case REFUSED:
			assert_int_equal(rc, -w->err);
			assert_true(err[0] != '\0');
			assert_int_equal(o.fd, -1);
			break;
		case IN_PLACE:
			assert_int_equal(rc, 0);
			assert_true(o.fd >= 0);
			assert_int_equal(cw_out_tmp(&o, err, sizeof(err)), -EINVAL);
			break;
		case RENAME:
			assert_int_equal(rc, 0);
			assert_int_equal(o.fd, -1);
			path_of(want_path, sizeof(want_path), w->target);
			assert_string_equal(o.path, want_path);
			break;
		}
		cw_out_release(&o);
		if (rdr >= 0)
			close(rdr);
	}
	assert_int_equal(tmp_count(), 0);
}

/* A link owned by another user is not followed (a planted /tmp/out.json
 * -> /etc/shadow); root only, since lchown needs it. */
static void foreign_link_refused(void **state)
{
	struct cw_out_rule rule = { NULL, 0, CW_OUT_REPLACE | CW_OUT_STREAM };
	struct cw_out o;
	char p[256], err[512];

	(void)state;
	link_to("planted", "old.json");
	path_of(p, sizeof(p), "planted");
	if (geteuid() != 0 || lchown(p, 65534, 65534)) {
		print_message("skipped: lchown needs root\n");
		return;
	}
	assert_int_equal(cw_out_resolve(&o, p, &rule, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "owned by uid 65534"));
	cw_out_release(&o);
}

/* Writing through a link: the link is still a link afterwards, and the
 * file it names holds the new bytes. */
static void commit_through_link(void **state)
{
	struct cw_out_rule rule = { NULL, 0, CW_OUT_REPLACE };
	struct cw_out o;
	char p[256], t[256], err[512], buf[16] = { 0 };
	struct stat st;
	FILE *f;
	int fd;

	(void)state;
	put("through.json", "before");
	link_to("link-through", "through.json");
	path_of(p, sizeof(p), "link-through");
	assert_int_equal(cw_out_resolve(&o, p, &rule, err, sizeof(err)), 0);
	assert_true((fd = cw_out_tmp(&o, err, sizeof(err))) >= 0);
	assert_int_equal(tmp_count(), 1);
	assert_int_equal(write(fd, "after", 5), 5);
	close(fd);
	assert_int_equal(cw_out_commit(&o, err, sizeof(err)), 0);
	cw_out_release(&o);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	path_of(t, sizeof(t), "through.json");
	assert_non_null(f = fopen(t, "r"));
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "after");
	assert_int_equal(tmp_count(), 0);
}

/* The commit looks again: a FIFO put in the name's place meanwhile is not
 * renamed over, a file that appeared is not replaced without
 * CW_OUT_REPLACE, and a failed commit leaves no temporary file. */
static void commit_looks_again(void **state)
{
	struct cw_out_rule keep = { NULL, 0, 0 }, repl = { NULL, 0, CW_OUT_REPLACE };
	struct cw_out o;
	char p[256], err[512];
	struct stat st;
	int fd;

	(void)state;
	path_of(p, sizeof(p), "race.json");
	assert_int_equal(cw_out_resolve(&o, p, &keep, err, sizeof(err)), 0);
	assert_true((fd = cw_out_tmp(&o, err, sizeof(err))) >= 0);
	close(fd);
	put("race.json", "appeared");
	assert_int_equal(cw_out_commit(&o, err, sizeof(err)), -EEXIST);
	cw_out_release(&o);
	assert_int_equal(tmp_count(), 0);

	path_of(p, sizeof(p), "race2.json");
	assert_int_equal(cw_out_resolve(&o, p, &repl, err, sizeof(err)), 0);
	assert_true((fd = cw_out_tmp(&o, err, sizeof(err))) >= 0);
	close(fd);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(cw_out_commit(&o, err, sizeof(err)), -EINVAL);
	cw_out_release(&o);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(tmp_count(), 0);
}

/* /proc/self/fd/N: the open file itself, in place. */
static void proc_fd_in_place(void **state)
{
	struct cw_out_rule rule = { NULL, 0, CW_OUT_REPLACE | CW_OUT_STREAM };
	struct cw_out o;
	char p[64], err[512], buf[8] = { 0 };
	int pfd[2];

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd[1]);
	assert_int_equal(cw_out_resolve(&o, p, &rule, err, sizeof(err)), 0);
	assert_true(o.fd >= 0);
	assert_int_equal(write(o.fd, "abc", 3), 3);
	cw_out_release(&o);
	assert_int_equal(read(pfd[0], buf, sizeof(buf)), 3);
	assert_string_equal(buf, "abc");
	close(pfd[0]);
	close(pfd[1]);
}

struct brow {
	const char *path; /* "@" stands for the directory's absolute path */
	unsigned flags;
	int err;          /* 0: accepted */
};

static const struct brow brows[] = {
	{ "t.json", 0, 0 },
	{ "@/t.json", 0, 0 },
	{ "./t.json", 0, 0 },
	{ "sub/t.json", 0, 0 },
	{ "/etc/passwd", R, EACCES },
	{ "/tmp/t.json", R, EACCES },
	{ "../t.json", R, EACCES },
	{ "sub/../../t.json", R, EACCES },
	{ "sub/../t.json", R, EACCES },
	{ "up/t.json", R, EACCES },   /* a link to the parent */
	{ "leaf", R, EACCES },        /* a link to a file outside */
	{ "exists.json", 0, EEXIST },
	{ "exists.json", R, 0 },
	{ "db.db", R, EINVAL },       /* the served database */
	{ "db.db-wal", R, EINVAL },
	{ "fifo", R, EINVAL },
	{ "sub", R, EISDIR },
	{ ".", R, EACCES },
	{ "sub/", R, EISDIR },
	{ "nosub/t.json", R, ENOENT },
};

static void beneath_table(void **state)
{
	char ed[256], p[512], err[512], db[300], outside[300];
	const char *inputs[1] = { db };

	(void)state;
	path_of(ed, sizeof(ed), "exports");
	snprintf(p, sizeof(p), "%s/sub", ed);
	/* The directory is made on first use, and its sub-directories exist. */
	{
		struct cw_out o;
		struct cw_out_rule r0 = { NULL, 0, 0 };

		assert_int_equal(cw_out_resolve_beneath(&o, ed, "first.json", &r0, err, sizeof(err)), 0);
		cw_out_release(&o);
	}
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/up", ed);
	assert_int_equal(symlink("..", p), 0);
	path_of(outside, sizeof(outside), "old.json");
	snprintf(p, sizeof(p), "%s/leaf", ed);
	assert_int_equal(symlink(outside, p), 0);
	snprintf(p, sizeof(p), "%s/exists.json", ed);
	fclose(fopen(p, "w"));
	snprintf(db, sizeof(db), "%s/db.db", ed);
	fclose(fopen(db, "w"));
	snprintf(p, sizeof(p), "%s/fifo", ed);
	assert_int_equal(mkfifo(p, 0644), 0);
	for (size_t i = 0; i < sizeof(brows) / sizeof(brows[0]); i++) {
		const struct brow *w = &brows[i];
		struct cw_out_rule rule = { inputs, 1, w->flags | CW_OUT_STREAM };
		struct cw_out o;
		int rc;

		if (w->path[0] == '@')
			snprintf(p, sizeof(p), "%s%s", ed, w->path + 1);
		else
			snprintf(p, sizeof(p), "%s", w->path);
		err[0] = '\0';
		rc = cw_out_resolve_beneath(&o, ed, p, &rule, err, sizeof(err));
		print_message("beneath %-18s: rc %d %s\n", w->path, rc, err);
		assert_int_equal(rc, -w->err);
		assert_int_equal(o.fd, -1);
		if (!rc)
			assert_int_equal(strncmp(o.path, ed, strlen(ed)), 0);
		cw_out_release(&o);
	}
	/* The file outside the directory was never touched. */
	{
		FILE *f = fopen(outside, "r");
		char buf[8] = { 0 };

		assert_non_null(f);
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		assert_string_equal(buf, "old");
	}
}

/* SIGTERM while a temporary file exists: the file is gone and the process
 * died of the signal (the handler re-raises it). */
static void signal_removes_tmp(void **state)
{
	int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	(void)state;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (!pid) {
			struct cw_out_rule rule = { NULL, 0, CW_OUT_REPLACE };
			struct cw_out o;
			char p[256], err[512];

			path_of(p, sizeof(p), "sig.json");
			if (cw_out_resolve(&o, p, &rule, err, sizeof(err)) || cw_out_tmp(&o, err, sizeof(err)) < 0)
				_exit(3);
			raise(sigs[i]);
			_exit(4);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), sigs[i]);
		assert_int_equal(tmp_count(), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rule_table),
		cmocka_unit_test(foreign_link_refused),
		cmocka_unit_test(commit_through_link),
		cmocka_unit_test(commit_looks_again),
		cmocka_unit_test(proc_fd_in_place),
		cmocka_unit_test(beneath_table),
		cmocka_unit_test(signal_removes_tmp),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
