/* The loader's architecture check of the BPF objects built into the
 * binary (loader/bpf_arch.c): every object carries this build's
 * architecture; an object tagged for the other one, a file that is not a
 * BPF object and bytes that are not ELF are refused with a message that
 * names the object and both architectures. */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.skel.h"
#include "loader/bpf_arch.h"

static void test_built_objects_match(void **state)
{
	char why[512] = "";
	char arch[32];
	size_t sz = 0;
	const void *b = cuda_bpf__elf_bytes(&sz);

#if defined(__x86_64__)
	assert_string_equal(cw_bpf_host_arch(), "x86_64");
#elif defined(__aarch64__)
	assert_string_equal(cw_bpf_host_arch(), "aarch64");
#endif
	assert_int_equal(cw_bpf_elf_arch(b, sz, arch, sizeof(arch)), 0);
	assert_string_equal(arch, cw_bpf_host_arch());
	assert_int_equal(cw_bpf_objects_check(why, sizeof(why)), 0);
	assert_string_equal(why, "");
}

/* The cuda object with its 16-byte tag rewritten to the other
 * architecture: what an arm64 binary with x86-64 objects inside holds. */
static void test_other_arch_refused(void **state)
{
	const char *host = cw_bpf_host_arch();
	const char *other = strcmp(host, "x86_64") ? "x86_64" : "aarch64";
	char tag[16] = "", repl[16] = "", why[512] = "", arch[32];
	size_t sz = 0;
	const void *b = cuda_bpf__elf_bytes(&sz);
	char *copy = malloc(sz), *at;

	assert_non_null(copy);
	memcpy(copy, b, sz);
	strncpy(tag, host, sizeof(tag) - 1);
	strncpy(repl, other, sizeof(repl) - 1);
	at = memmem(copy, sz, tag, sizeof(tag));
	assert_non_null(at);
	memcpy(at, repl, sizeof(repl));
	assert_int_equal(cw_bpf_elf_arch(copy, sz, arch, sizeof(arch)), 0);
	assert_string_equal(arch, other);
	assert_int_equal(cw_bpf_object_check("cuda", copy, sz, why, sizeof(why)), -ENOEXEC);
	assert_non_null(strstr(why, "\"cuda\""));
	assert_non_null(strstr(why, other));
	assert_non_null(strstr(why, host));
	free(copy);
}

static void test_not_bpf_refused(void **state)
{
	static const char junk[] = "not an ELF file at all";
	char why[512], arch[32];
	FILE *f = fopen("/proc/self/exe", "rb");
	char *exe = malloc(1 << 20);
	size_t n;

	assert_int_equal(cw_bpf_elf_arch(junk, sizeof(junk), arch, sizeof(arch)), -ENOEXEC);
	assert_non_null(f);
	assert_non_null(exe);
	n = fread(exe, 1, 1 << 20, f);
	fclose(f);
	assert_true(n > 64);
	/* An ELF file, but for the CPU, not EM_BPF. */
	assert_int_equal(cw_bpf_object_check("exe", exe, n, why, sizeof(why)), -ENOEXEC);
	assert_non_null(strstr(why, "not a BPF ELF object"));
	free(exe);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built_objects_match),
		cmocka_unit_test(test_other_arch_refused),
		cmocka_unit_test(test_not_bpf_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
