/* Files opened inside a process's root (util/root_open.c): a tree in a
 * temporary directory stands for the root, with a file of the same name
 * outside it. Both the openat2 form and the hand walk must open only
 * regular files within the size bound, resolve every link (absolute,
 * relative, "..") inside the root, never block on a FIFO, and agree. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/root_open.h"

static char top[64], rootdir[96];

static void put(const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *target, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
	static const char *const dirs[] = { "root", "root/usr", "root/usr/lib", "root/usr/lib/debug",
					    "root/usr/lib/debug/.build-id", "root/usr/lib/debug/.build-id/ab",
					    "root/lib" };
	char p[256];
	size_t i;

	(void)state;
	snprintf(top, sizeof(top), "/tmp/cw_rootopen_XXXXXX");
	assert_non_null(mkdtemp(top));
	snprintf(rootdir, sizeof(rootdir), "%s/root", top);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", top, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	put("secret", "outside");     /* the host's file */
	put("root/secret", "inside"); /* the process's file of that name */
	put("root/lib/real.debug", "real debug file");
	put("root/usr/lib/big", "0123456789");
	snprintf(p, sizeof(p), "%s/root/usr/lib/debug/.build-id/ab/fifo.debug", top);
	assert_int_equal(mkfifo(p, 0600), 0);
	/* what a process plants at its build-id paths */
	snprintf(p, sizeof(p), "%s/secret", top); /* absolute, to the host's file */
	link_at(p, "root/usr/lib/debug/.build-id/ab/abs_out.debug");
	link_at("../../../../../../../../secret", "root/usr/lib/debug/.build-id/ab/up.debug");
	link_at("/secret", "root/usr/lib/debug/.build-id/ab/abs.debug");
	link_at("../../../../../lib/real.debug", "root/usr/lib/debug/.build-id/ab/rel.debug");
	link_at("/proc/self/root/secret", "root/usr/lib/debug/.build-id/ab/magic.debug");
	link_at("loop2", "root/usr/lib/debug/.build-id/ab/loop1");
	link_at("loop1", "root/usr/lib/debug/.build-id/ab/loop2");
	link_at("/usr/lib/debug/.build-id/ab/fifo.debug", "root/usr/lib/debug/.build-id/ab/to_fifo.debug");
	link_at("/usr/lib", "root/libdir");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd);
}

/* What both forms open for path: the file's first bytes, or -errno. */
static int both(const char *path, uint64_t max, char *text, size_t len)
{
	int rootfd = open(rootdir, O_PATH | O_DIRECTORY | O_CLOEXEC), a, b, r = 0;
	char t2[64] = "";
	ssize_t n;

	assert_true(rootfd >= 0);
	a = cw_root_openat(rootfd, path, max);
	b = cw_root_openat_walk(rootfd, path, max);
	close(rootfd);
	text[0] = '\0';
	if (a >= 0) {
		int fl = fcntl(a, F_GETFL);

		assert_true(fl & O_NONBLOCK);
		assert_int_equal(fl & O_ACCMODE, O_RDONLY);
		n = read(a, text, len - 1);
		text[n > 0 ? n : 0] = '\0';
		close(a);
	} else {
		r = a;
	}
	if (b >= 0) {
		n = read(b, t2, sizeof(t2) - 1);
		t2[n > 0 ? n : 0] = '\0';
		close(b);
	}
	/* the fallback walk agrees with the kernel's */
	assert_int_equal(a < 0 ? a : 0, b < 0 ? b : 0);
	assert_string_equal(text, t2);
	return r;
}

static void test_links_stay_inside(void **state)
{
	char t[64];

	(void)state;
	assert_int_equal(both("/lib/real.debug", 1 << 20, t, sizeof(t)), 0);
	assert_string_equal(t, "real debug file");
	assert_int_equal(both("usr/lib/debug/.build-id/ab/rel.debug", 1 << 20, t, sizeof(t)), 0);
	assert_string_equal(t, "real debug file");
	/* ".." and absolute links stop at the root: the process's own file */
	assert_int_equal(both("/usr/lib/debug/.build-id/ab/up.debug", 1 << 20, t, sizeof(t)), 0);
	assert_string_equal(t, "inside");
	assert_int_equal(both("/usr/lib/debug/.build-id/ab/abs.debug", 1 << 20, t, sizeof(t)), 0);
	assert_string_equal(t, "inside");
	assert_int_equal(both("/../../../secret", 1 << 20, t, sizeof(t)), 0);
	assert_string_equal(t, "inside");
	assert_int_equal(both("/libdir/big", 1 << 20, t, sizeof(t)), 0);
	assert_string_equal(t, "0123456789");
	/* the host's tree named by an absolute link is looked up inside */
	assert_int_equal(both("/usr/lib/debug/.build-id/ab/abs_out.debug", 1 << 20, t, sizeof(t)), -ENOENT);
	/* no /proc magic link is followed */
	assert_true(both("/usr/lib/debug/.build-id/ab/magic.debug", 1 << 20, t, sizeof(t)) < 0);
	assert_int_equal(both("/usr/lib/debug/.build-id/ab/loop1", 1 << 20, t, sizeof(t)), -ELOOP);
}

static void test_regular_within_bound(void **state)
{
	char t[64];

	(void)state;
	/* a FIFO is refused at once, directly or through a link */
	assert_int_equal(both("/usr/lib/debug/.build-id/ab/fifo.debug", 1 << 20, t, sizeof(t)), -EINVAL);
	assert_int_equal(both("/usr/lib/debug/.build-id/ab/to_fifo.debug", 1 << 20, t, sizeof(t)), -EINVAL);
	assert_int_equal(both("/usr/lib", 1 << 20, t, sizeof(t)), -EISDIR);
	assert_int_equal(both("/", 1 << 20, t, sizeof(t)), -EISDIR);
	assert_int_equal(both("/usr/lib/big", 9, t, sizeof(t)), -EFBIG);
	assert_int_equal(both("/usr/lib/big", 10, t, sizeof(t)), 0);
	assert_int_equal(both("/usr/lib/big/x", 10, t, sizeof(t)), -ENOTDIR);
	/* host paths: the same rule */
	assert_int_equal(cw_open_regular("/dev/null", 1 << 20), -EINVAL);
	{
		int fd = cw_open_regular("/proc/self/exe", CW_ROOT_ELF_MAX);

		assert_true(fd >= 0);
		close(fd);
	}
}

static void test_proc_root(void **state)
{
	char p[128];
	int fd;

	(void)state;
	snprintf(p, sizeof(p), "%s/secret", top);
	fd = cw_proc_root_open(getpid(), p, 100);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(cw_proc_root_open(0x7ffffff0, p, 100), -ESRCH);
	/* /proc's magic links are not followed, by either form */
	assert_int_equal(cw_proc_root_open(getpid(), "/proc/self/exe", CW_ROOT_ELF_MAX), -ELOOP);
	{
		int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

		assert_int_equal(cw_root_openat_walk(rootfd, "/proc/self/exe", CW_ROOT_ELF_MAX), -ELOOP);
		assert_int_equal(cw_root_openat_walk(rootfd, "/proc/self/root/etc/hostname", CW_ROOT_ELF_MAX), -ELOOP);
		close(rootfd);
	}
}

static void test_build_id_path(void **state)
{
	char p[300];

	(void)state;
	assert_int_equal(cw_build_id_debug_path("ab12cd", p, sizeof(p)), 0);
	assert_string_equal(p, "/usr/lib/debug/.build-id/ab/12cd.debug");
	assert_int_equal(cw_build_id_debug_path("", p, sizeof(p)), -EINVAL);
	assert_int_equal(cw_build_id_debug_path("ab1", p, sizeof(p)), -EINVAL);
	assert_int_equal(cw_build_id_debug_path("ab/../x", p, sizeof(p)), -EINVAL);
	assert_int_equal(cw_build_id_debug_path("AB12", p, sizeof(p)), -EINVAL);
	assert_int_equal(cw_build_id_debug_path("ab12cd", p, 20), -ENAMETOOLONG);
}

static void test_pathwalk(void **state)
{
	struct cw_pathwalk w;
	char n[16];

	(void)state;
	assert_int_equal(cw_pathwalk_init(&w, "//a/./b/../c/"), 0);
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_NAME);
	assert_string_equal(n, "a");
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_NAME);
	assert_string_equal(n, "b");
	/* b is a link to /x/y: its components come next, from the root */
	assert_int_equal(cw_pathwalk_link(&w, "/x/y"), 1);
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_NAME);
	assert_string_equal(n, "x");
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_NAME);
	assert_string_equal(n, "y");
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_UP);
	assert_true(cw_pathwalk_more(&w));
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_NAME);
	assert_string_equal(n, "c");
	assert_false(cw_pathwalk_more(&w));
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_END);
	assert_int_equal(cw_pathwalk_init(&w, "a/."), 0);
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), CW_WALK_NAME);
	assert_false(cw_pathwalk_more(&w));
	assert_int_equal(cw_pathwalk_init(&w, "0123456789abcdefg"), 0);
	assert_int_equal(cw_pathwalk_next(&w, n, sizeof(n)), -ENAMETOOLONG);
	assert_int_equal(cw_pathwalk_link(&w, ""), -ELOOP);
	assert_int_equal(cw_pathwalk_init(&w, "a"), 0);
	for (int i = 0; i < CW_WALK_MAX_LINKS; i++)
		assert_int_equal(cw_pathwalk_link(&w, "r"), 0);
	assert_int_equal(cw_pathwalk_link(&w, "r"), -ELOOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links_stay_inside),
		cmocka_unit_test(test_regular_within_bound),
		cmocka_unit_test(test_proc_root),
		cmocka_unit_test(test_build_id_path),
		cmocka_unit_test(test_pathwalk),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
