/* Secure-by-default pieces that need no server: the generated token file
 * (made 0600, reused, refused when unsafe), the config's booleans, the
 * Origin rule shared by every route, and where's ptrace rule for a caller. */
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

#include "config/config.h"
#include "mcp/mcp.h"
#include "server/internal.h"
#include "server/server.h"

static char dir[] = "/tmp/cw-test-token-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_token_created_then_reused(void **state)
{
	char path[256], err[512];
	char *a, *b;
	struct stat st;
	int created;

	(void)state;
	snprintf(path, sizeof(path), "%s/home/.causeway/token", dir);
	snprintf(err, sizeof(err), "%s/home", dir);
	assert_int_equal(mkdir(err, 0755), 0);
	a = cw_token_load_or_create(path, &created, err, sizeof(err));
	assert_non_null(a);
	assert_int_equal(created, 1);
	assert_int_equal(strlen(a), 64);
	assert_int_equal(strspn(a, "0123456789abcdef"), 64);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(err, sizeof(err), "%s/home/.causeway", dir);
	assert_int_equal(stat(err, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	b = cw_token_load_or_create(path, &created, err, sizeof(err));
	assert_non_null(b);
	assert_int_equal(created, 0);
	assert_string_equal(a, b);
	free(b);
	/* Group- or world-readable: refused, left as it is. */
	assert_int_equal(chmod(path, 0640), 0);
	assert_null(cw_token_load_or_create(path, &created, err, sizeof(err)));
	assert_non_null(strstr(err, "can be read by other users (mode 0640)"));
	assert_int_equal(chmod(path, 0600), 0);
	/* A link to it: refused even though the target is fine. */
	snprintf(err, sizeof(err), "%s/link", dir);
	assert_int_equal(symlink(path, err), 0);
	b = cw_token_load_or_create(err, &created, err, sizeof(err));
	assert_null(b);
	assert_non_null(strstr(err, "symbolic link"));
	free(a);
}

static void test_token_bad_content(void **state)
{
	char path[256], err[512];
	int created, fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/short", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc def\n", 8), 8);
	close(fd);
	assert_null(cw_token_load_or_create(path, &created, err, sizeof(err)));
	assert_non_null(strstr(err, "does not hold one token line"));
	/* A directory is not a token file. */
	snprintf(path, sizeof(path), "%s/adir", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_null(cw_token_load_or_create(path, &created, err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
}

static void test_token_default_path(void **state)
{
	char buf[256], *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

	(void)state;
	setenv("HOME", "/home/u", 1);
	assert_int_equal(cw_token_default_path("/var/lib/causeway/c.db", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/home/u/.causeway/token");
	unsetenv("HOME");
	assert_int_equal(cw_token_default_path("/var/lib/causeway/c.db", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/lib/causeway/causeway-token");
	assert_int_equal(cw_token_default_path("c.db", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "./causeway-token");
	assert_int_equal(cw_token_default_path(NULL, buf, sizeof(buf)), -ENOENT);
	if (home)
		setenv("HOME", home, 1);
	free(home);
}

static void test_config_booleans(void **state)
{
	struct cw_config c;
	char err[512];
	const char *y = "server:\n  mcp_live_tools: true\n  no_auth: false\n";

	(void)state;
	assert_int_equal(cw_config_parse(y, strlen(y), "t.yaml", "/etc", &c, err, sizeof(err)), 0);
	assert_int_equal(c.server_mcp_live_tools, 1);
	assert_int_equal(c.server_no_auth, 0);
	cw_config_free(&c);
	y = "server:\n  mcp_live_tools: maybe\n";
	assert_int_equal(cw_config_parse(y, strlen(y), "t.yaml", "/etc", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 2"));
	assert_non_null(strstr(err, "bad boolean \"maybe\""));
	cw_config_free(&c);
}

/* Every route: the server's own origin (the dashboard on a network
 * address) is allowed as well as loopback; another host is not. */
static void test_origin_same_host(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(cw_origin_check("https://gpu-17:7070", "gpu-17:7070", 0, why, sizeof(why)), 0);
	assert_int_equal(cw_origin_check("https://gpu-17:7070", "gpu-18:7070", 0, why, sizeof(why)), -EACCES);
	assert_int_equal(cw_origin_check("https://gpu-17:7070", "gpu-17:7071", 0, why, sizeof(why)), -EACCES);
	assert_int_equal(cw_origin_check("https://gpu-17:7070.evil", "gpu-17:7070", 0, why, sizeof(why)),
			 -EACCES);
}

static void test_ptrace_rule(void **state)
{
	struct cw_mcp_caller who = { .known = 1, .uid = 65534, .gid = 65534 };
	char err[512];

	(void)state;
	/* pid 1 is root's: a caller of another uid may not. */
	assert_int_equal(cw_mcp_may_ptrace(&who, 1, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "may not trace"));
	/* CAP_SYS_PTRACE may; an unknown caller is the process itself. */
	who.cap_sys_ptrace = 1;
	assert_int_equal(cw_mcp_may_ptrace(&who, 1, err, sizeof(err)), 0);
	who.cap_sys_ptrace = 0;
	who.known = 0;
	assert_int_equal(cw_mcp_may_ptrace(&who, 1, err, sizeof(err)), 0);
	/* Our own process, as ourselves. */
	assert_int_equal(cw_mcp_caller_from_fd(-1, &who), 0);
	assert_true(who.known);
	assert_int_equal(who.uid, getuid());
	who.cap_sys_ptrace = 0;
	assert_int_equal(cw_mcp_may_ptrace(&who, getpid(), err, sizeof(err)), 0);
	assert_int_equal(cw_mcp_may_ptrace(&who, 1073741823, err, sizeof(err)), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_created_then_reused),
		cmocka_unit_test(test_token_bad_content),
		cmocka_unit_test(test_token_default_path),
		cmocka_unit_test(test_config_booleans),
		cmocka_unit_test(test_origin_same_host),
		cmocka_unit_test(test_ptrace_rule),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
