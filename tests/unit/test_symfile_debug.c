/* Build-id debug files (symbol/symfile.c, cw_symfile_add_debug): a debug
 * file is accepted only when its GNU build-id is the file's own (the test
 * binary as its own "debug file"), and refused for another ELF object (the
 * C library) or a file that is not ELF, leaving the symbols as they were.
 * Also whether the DWARF unwinder is in this build (the release files link
 * libdw statically: the aarch64 unit run checks it there). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbol/dwstack.h"
#include "symbol/symfile.h"

__attribute__((noinline)) int symfile_debug_marker(int x)
{
	return x * 7 + 1;
}

static void test_add_debug(void **state)
{
	struct cw_symfile *f;
	const char *name;
	uint64_t off, v, sz;
	char tmpl[] = "/tmp/cw_symdbg_XXXXXX";
	Dl_info di;
	int fd;

	assert_int_equal(cw_symfile_open(&f, "/proc/self/exe"), 0);
	assert_true(strlen(cw_symfile_build_id(f)) >= 16);
	assert_true(cw_symfile_has_symtab(f));
	assert_int_equal(cw_symfile_find(f, "symfile_debug_marker", &v, &sz), 0);
	/* the same build-id: accepted */
	assert_int_equal(cw_symfile_add_debug(f, "/proc/self/exe"), 0);
	/* another object's: refused */
	assert_true(dladdr((void *)&printf, &di) && di.dli_fname);
	assert_int_equal(cw_symfile_add_debug(f, di.dli_fname), -ENOEXEC);
	/* not ELF */
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an elf file\n", 16), 16);
	close(fd);
	assert_int_equal(cw_symfile_add_debug(f, tmpl), -ENOEXEC);
	unlink(tmpl);
	assert_int_equal(cw_symfile_add_debug(f, "/nonexistent/x.debug"), -ENOENT);
	/* still the binary's own symbols */
	assert_int_equal(cw_symfile_addr2sym(f, v + 1, &name, &off), 0);
	assert_string_equal(name, "symfile_debug_marker");
	assert_int_equal(off, 1);
	cw_symfile_free(f);
	assert_int_equal(symfile_debug_marker(1), 8);
}

static void test_dwarf_unwinder_built_in(void **state)
{
	struct cw_dwstack *d;

	assert_int_equal(cw_dwstack_available(), 1);
	/* no such process: an error, not a crash */
	assert_true(cw_dwstack_open(0x3fffffff, &d) < 0);
	assert_null(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_debug),
		cmocka_unit_test(test_dwarf_unwinder_built_in),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
