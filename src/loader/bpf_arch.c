/*
 * BPF objects are built per architecture: a uprobe program reads the
 * probed function's arguments from that architecture's registers and stack
 * (src/bpf/args.bpf.h), so an arm64 agent with x86-64 objects inside would
 * load cleanly and then record wrong arguments (streams, sizes,
 * communicators) without any error. Every object carries its architecture
 * as the cw_bpf_arch symbol; the ELF machine alone cannot tell (EM_BPF for
 * all), so the loader reads that tag and refuses a mismatch before it opens
 * anything.
 */
#include "loader/bpf_arch.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.skel.h"
#include "cuda_noloop.skel.h"
#include "cuda_sessctx.skel.h"
#include "discover.skel.h"
#include "io.skel.h"
#include "mem.skel.h"
#include "net.skel.h"
#include "proc.skel.h"
#include "sched.skel.h"

#ifndef EM_BPF
#define EM_BPF 247
#endif

const char *cw_bpf_host_arch(void)
{
#if defined(__x86_64__)
	return "x86_64";
#elif defined(__aarch64__)
	return "aarch64";
#else
	return "unsupported";
#endif
}

/* The bytes of symbol sym (value, size) in section index shndx. */
static int sym_bytes(Elf *e, const GElf_Sym *sym, char *arch, size_t cap)
{
	Elf_Scn *scn = elf_getscn(e, sym->st_shndx);
	Elf_Data *d;
	size_t n;

	if (!scn || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
		return -ENOENT;
	if (sym->st_value > d->d_size || sym->st_size > d->d_size - sym->st_value)
		return -ENOENT;
	n = sym->st_size < cap - 1 ? sym->st_size : cap - 1;
	memcpy(arch, (const char *)d->d_buf + sym->st_value, n);
	arch[n] = '\0';
	return arch[0] ? 0 : -ENOENT;
}

int cw_bpf_elf_arch(const void *elf, size_t len, char *arch, size_t cap)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	char *copy;
	Elf *e;
	int rc = -ENOENT;

	if (!cap)
		return -EINVAL;
	arch[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EIO;
	/* libelf may write to what elf_memory() is given; the skeleton's
	 * bytes are read-only. */
	if (!(copy = malloc(len ? len : 1)))
		return -ENOMEM;
	memcpy(copy, elf, len);
	if (!(e = elf_memory(copy, len))) {
		free(copy);
		return -ENOEXEC;
	}
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_machine != EM_BPF) {
		rc = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		if (!(d = elf_getdata(scn, NULL)))
			break;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (name && !strcmp(name, "cw_bpf_arch")) {
				rc = sym_bytes(e, &sym, arch, cap);
				goto out;
			}
		}
	}
out:
	elf_end(e);
	free(copy);
	return rc;
}

int cw_bpf_object_check(const char *name, const void *elf, size_t len, char *why, size_t whylen)
{
	const char *host = cw_bpf_host_arch();
	char arch[32];
	int rc = cw_bpf_elf_arch(elf, len, arch, sizeof(arch));

	if (rc == -ENOEXEC) {
		snprintf(why, whylen, "BPF object \"%s\" is not a BPF ELF object", name);
		return -ENOEXEC;
	}
	if (rc) {
		snprintf(why, whylen, "BPF object \"%s\" carries no architecture tag; this causeway is %s: "
			 "rebuild it from one source tree", name, host);
		return -ENOEXEC;
	}
	if (strcmp(arch, host) != 0) {
		snprintf(why, whylen, "BPF object \"%s\" was built for %s but this causeway is %s: "
			 "its probes would read arguments from the wrong registers; build causeway for %s "
			 "(make release-%s)", name, arch, host, host, host);
		return -ENOEXEC;
	}
	return 0;
}

int cw_bpf_objects_check(char *why, size_t whylen)
{
	static const struct {
		const char *name;
		const void *(*bytes)(size_t *sz);
	} objs[] = {
		{ "cuda", cuda_bpf__elf_bytes },   { "cuda_sessctx", cuda_sessctx_bpf__elf_bytes },
		{ "cuda_noloop", cuda_noloop_bpf__elf_bytes },
		{ "discover", discover_bpf__elf_bytes },
		{ "io", io_bpf__elf_bytes },       { "mem", mem_bpf__elf_bytes },
		{ "net", net_bpf__elf_bytes },     { "proc", proc_bpf__elf_bytes },
		{ "sched", sched_bpf__elf_bytes },
	};
	size_t i;
	int rc;

	for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		size_t sz = 0;
		const void *b = objs[i].bytes(&sz);

		if ((rc = cw_bpf_object_check(objs[i].name, b, sz, why, whylen)))
			return rc;
	}
	return 0;
}
