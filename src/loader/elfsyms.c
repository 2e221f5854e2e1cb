#define _GNU_SOURCE /* memmem */
#include "loader/elfsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/root_open.h"

struct cw_elf {
	int fd;
	Elf *elf;
	char soname[256];
};

static void read_soname(struct cw_elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e->elf, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			return;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(d, (int)i, &dyn))
				break;
			if (dyn.d_tag != DT_SONAME)
				continue;
			s = elf_strptr(e->elf, sh.sh_link, dyn.d_un.d_val);
			if (s)
				snprintf(e->soname, sizeof(e->soname), "%s", s);
			return;
		}
	}
}

int cw_elf_open(struct cw_elf **out, const char *path)
{
	struct cw_elf *e;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* path may be a file a traced process named (its libraries through
	 * /proc/PID/root): a regular file only, never an open that waits */
	e->fd = cw_open_regular(path, CW_ROOT_ELF_MAX);
	if (e->fd < 0) {
		err = e->fd;
		free(e);
		return err;
	}
	/* MMAP: libnccl is ~200 MiB; only the pages of the tables read are
	 * touched. */
	e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF) {
		cw_elf_close(e);
		return -ENOEXEC;
	}
	read_soname(e);
	*out = e;
	return 0;
}

int cw_elf_native(const struct cw_elf *e)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(e->elf, &eh))
		return 0;
#if defined(__x86_64__)
	return eh.e_machine == EM_X86_64;
#elif defined(__aarch64__)
	return eh.e_machine == EM_AARCH64;
#else
	return 0;
#endif
}

void cw_elf_close(struct cw_elf *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

const char *cw_elf_soname(const struct cw_elf *e)
{
	return e->soname;
}

int cw_elf_foreach_sym(struct cw_elf *e, int dynamic,
		       int (*fn)(const struct cw_elf_sym *sym, void *arg), void *arg)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf64_Word want = dynamic ? SHT_DYNSYM : SHT_SYMTAB;

	while ((scn = elf_nextscn(e->elf, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			return -ENOEXEC;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			struct cw_elf_sym s;
			GElf_Sym sym;
			int rc;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0)
				continue;
			s.name = elf_strptr(e->elf, sh.sh_link, sym.st_name);
			if (!s.name || !*s.name)
				continue;
			s.value = sym.st_value;
			s.size = sym.st_size;
			s.type = GELF_ST_TYPE(sym.st_info);
			s.bind = GELF_ST_BIND(sym.st_info);
			rc = fn(&s, arg);
			if (rc)
				return rc;
		}
		return 0;
	}
	return -ENOENT;
}

/* "name" equals sym, or sym is "name@VER" / "name@@VER" (.symtab spelling). */
static int name_matches(const char *sym, const char *name)
{
	size_t n = strlen(name);

	return strncmp(sym, name, n) == 0 && (sym[n] == '\0' || sym[n] == '@');
}

struct find_ctx {
	const char *name;
	struct cw_elf_sym *out;
};

static int find_cb(const struct cw_elf_sym *sym, void *arg)
{
	struct find_ctx *c = arg;

	if (!name_matches(sym->name, c->name))
		return 0;
	*c->out = *sym;
	return 1;
}

int cw_elf_find_sym(struct cw_elf *e, const char *name, struct cw_elf_sym *sym)
{
	struct find_ctx c = { name, sym };

	if (cw_elf_foreach_sym(e, 1, find_cb, &c) == 1)
		return 0;
	if (cw_elf_foreach_sym(e, 0, find_cb, &c) == 1)
		return 0;
	return -ENOENT;
}

int cw_elf_vaddr_to_offset(struct cw_elf *e, uint64_t vaddr, uint64_t *offset)
{
	size_t i, n;

	if (elf_getphdrnum(e->elf, &n) != 0)
		return -ENOEXEC;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int cw_elf_find_rodata_string(struct cw_elf *e, const char *prefix, char *buf, size_t len)
{
	size_t shstrndx, plen = strlen(prefix);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (!plen || !len || elf_getshdrstrndx(e->elf, &shstrndx) != 0)
		return -ENOENT;
	while ((scn = elf_nextscn(e->elf, scn))) {
		const char *name, *p, *end;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".rodata", 7) != 0)
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		p = d->d_buf;
		end = p + d->d_size;
		while ((p = memmem(p, (size_t)(end - p), prefix, plen))) {
			/* Only whole strings: the match must start one. */
			if (p == (const char *)d->d_buf || p[-1] == '\0') {
				size_t i = 0;

				while (p + i < end && p[i] && i + 1 < len) {
					buf[i] = p[i];
					i++;
				}
				buf[i] = '\0';
				return 0;
			}
			p += plen;
		}
	}
	return -ENOENT;
}
