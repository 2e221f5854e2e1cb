/* Uprobe attach offsets (loader/elfsyms.c) on this build's architecture:
 * the file offset computed for a function from its symbol and the PT_LOAD
 * segments holds the very bytes the running process executes at that
 * function, in this executable and in glibc. The aarch64 build runs this
 * under qemu-user, so both architectures' ELF layouts are checked. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/elfsyms.h"

/* A function of this executable with a symbol of its own. */
__attribute__((noinline, used)) int cw_offsets_target(int x)
{
	return x * 3 + 1;
}

/* The bytes at the offset computed for name in file equal the code at
 * addr, where the process runs it. */
static void check_fn(const char *file, const char *name, const void *addr, uint64_t vaddr_base)
{
	struct cw_elf *e = NULL;
	struct cw_elf_sym sym;
	uint64_t off = 0;
	unsigned char disk[16];
	FILE *f;

	assert_int_equal(cw_elf_open(&e, file), 0);
	assert_int_equal(cw_elf_find_sym(e, name, &sym), 0);
	/* The symbol's address in the object is where it sits in memory less
	 * the object's load bias. */
	assert_true((uint64_t)(uintptr_t)addr - vaddr_base == sym.value);
	assert_int_equal(cw_elf_vaddr_to_offset(e, sym.value, &off), 0);
	cw_elf_close(e);
	f = fopen(file, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, (long)off, SEEK_SET), 0);
	assert_int_equal(fread(disk, 1, sizeof(disk), f), sizeof(disk));
	fclose(f);
	assert_memory_equal(disk, addr, sizeof(disk));
}

static void test_own_function(void **state)
{
	char exe[PATH_MAX];
	Dl_info di;

	/* Under qemu-user /proc/self/exe reads as the emulated program. */
	assert_non_null(realpath("/proc/self/exe", exe));
	assert_true(dladdr((void *)cw_offsets_target, &di) != 0);
	assert_int_equal(cw_offsets_target(2), 7);
	check_fn(exe, "cw_offsets_target", (const void *)cw_offsets_target, (uint64_t)(uintptr_t)di.dli_fbase);
}

static void test_libc_function(void **state)
{
	void *fn = dlsym(RTLD_DEFAULT, "getpid");
	char path[PATH_MAX];
	Dl_info di;

	assert_non_null(fn);
	assert_true(dladdr(fn, &di) != 0);
	assert_non_null(realpath(di.dli_fname, path));
	check_fn(path, "getpid", fn, (uint64_t)(uintptr_t)di.dli_fbase);
}

/* A path a traced process chose can name a FIFO: refused at once (a
 * plain open would wait for a writer; alarm ends the test if it does). */
static void test_not_regular(void **state)
{
	char dir[] = "/tmp/cw_elfopen_XXXXXX", fifo[64];
	struct cw_elf *e = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/lib.so", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);
	assert_int_equal(cw_elf_open(&e, fifo), -EINVAL);
	assert_int_equal(cw_elf_open(&e, "/dev/null"), -EINVAL);
	alarm(0);
	assert_null(e);
	unlink(fifo);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_function),
		cmocka_unit_test(test_libc_function),
		cmocka_unit_test(test_not_regular),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
