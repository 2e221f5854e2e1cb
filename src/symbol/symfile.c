#include "symbol/symfile.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/root_open.h"

#define MAX_LOADS 16
/* Symbol names beyond this are truncated in the pool: a hostile file with
 * megabyte-long names must not blow up memory. */
#define NAME_CAP 1024

struct sym {
	uint64_t addr, size;
	uint32_t name; /* offset in pool */
};

struct cw_symfile {
	struct sym *syms;
	size_t nsyms;
	char *pool;
	size_t pool_len, pool_cap;
	struct { uint64_t off, vaddr, filesz; } loads[MAX_LOADS];
	int nloads;
	int is_dyn;
	char build_id[81];
	/* data symbols looked up by name: kept from both tables, unsorted */
	struct sym *objs;
	size_t nobjs;
	size_t syms_cap, objs_cap;
	int have_symtab;
};

static int pool_add(struct cw_symfile *f, const char *s, uint32_t *off)
{
	size_t n = strnlen(s, NAME_CAP);
	char *np;

	if (f->pool_len + n + 1 > f->pool_cap) {
		size_t cap = f->pool_cap ? f->pool_cap * 2 : 65536;

		while (cap < f->pool_len + n + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -E2BIG;
		np = realloc(f->pool, cap);
		if (!np)
			return -ENOMEM;
		f->pool = np;
		f->pool_cap = cap;
	}
	memcpy(f->pool + f->pool_len, s, n);
	f->pool[f->pool_len + n] = '\0';
	*off = (uint32_t)f->pool_len;
	f->pool_len += n + 1;
	return 0;
}

static int push(struct sym **arr, size_t *n, size_t *cap, const struct sym *s)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct sym *na = realloc(*arr, nc * sizeof(**arr));

		if (!na)
			return -ENOMEM;
		*arr = na;
		*cap = nc;
	}
	(*arr)[(*n)++] = *s;
	return 0;
}

static int read_table(struct cw_symfile *f, Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, size_t *cap, size_t *ocap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;

	if (!data || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym gs;
		const char *name;
		struct sym s;
		int type, err;

		if (!gelf_getsym(data, (int)i, &gs) || gs.st_shndx == SHN_UNDEF || !gs.st_value)
			continue;
		type = GELF_ST_TYPE(gs.st_info);
		if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(elf, sh->sh_link, gs.st_name);
		if (!name || !*name)
			continue;
		s.addr = gs.st_value;
		s.size = gs.st_size;
		err = pool_add(f, name, &s.name);
		if (err)
			return err;
		err = type == STT_OBJECT ? push(&f->objs, &f->nobjs, ocap, &s) : push(&f->syms, &f->nsyms, cap, &s);
		if (err)
			return err;
	}
	return 0;
}

static void read_build_id(struct cw_symfile *f, Elf_Scn *scn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4)) {
			const unsigned char *d = (const unsigned char *)data->d_buf + desc_off;
			size_t i, n = nh.n_descsz > 40 ? 40 : nh.n_descsz;

			for (i = 0; i < n; i++) {
				static const char hex[] = "0123456789abcdef";

				f->build_id[2 * i] = hex[d[i] >> 4];
				f->build_id[2 * i + 1] = hex[d[i] & 15];
			}
			f->build_id[2 * n] = '\0';
			return;
		}
	}
}

/* MiniDebugInfo (.gnu_debugdata): an xz-compressed ELF holding the
 * .symtab entries a stripped binary dropped (Fedora, and any distribution
 * that keeps function symbols this way). Its addresses are the binary's
 * own. The decompressed size is capped: the section is hostile input. */
#define MINIDEBUG_MAX (64u << 20)

static int read_minidebuginfo(struct cw_symfile *f, Elf_Scn *scn, size_t *cap, size_t *ocap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	uint64_t memlimit = MINIDEBUG_MAX * 2ull;
	size_t in_pos = 0, out_pos = 0, out_len = 1u << 20, shstrndx;
	uint8_t *out = NULL, *grown;
	Elf_Scn *s = NULL;
	Elf *mini;
	lzma_ret r;
	int err = 0;

	if (!data || !data->d_buf || !data->d_size)
		return 0;
	for (;;) {
		grown = realloc(out, out_len);
		if (!grown) {
			free(out);
			return -ENOMEM;
		}
		out = grown;
		in_pos = out_pos = 0;
		r = lzma_stream_buffer_decode(&memlimit, 0, NULL, data->d_buf, &in_pos, data->d_size, out, &out_pos,
					      out_len);
		if (r != LZMA_BUF_ERROR || out_len >= MINIDEBUG_MAX)
			break;
		out_len *= 4; /* the output did not fit: retry larger */
	}
	if (r != LZMA_OK) {
		free(out);
		return 0; /* corrupt or over the cap: no extra symbols */
	}
	mini = elf_memory((char *)out, out_pos);
	if (mini && elf_kind(mini) == ELF_K_ELF && !elf_getshdrstrndx(mini, &shstrndx)) {
		while (!err && (s = elf_nextscn(mini, s))) {
			GElf_Shdr sh;

			if (gelf_getshdr(s, &sh) && sh.sh_type == SHT_SYMTAB)
				err = read_table(f, mini, s, &sh, cap, ocap);
		}
	}
	if (mini)
		elf_end(mini);
	free(out);
	return err;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int cw_symfile_open(struct cw_symfile **out, const char *path)
{
	int fd = cw_open_regular(path, CW_ROOT_ELF_MAX), err;

	*out = NULL;
	if (fd < 0)
		return fd;
	err = cw_symfile_open_fd(out, fd);
	close(fd);
	return err;
}

int cw_symfile_open_fd(struct cw_symfile **out, int fd)
{
	struct cw_symfile *f;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL, *debugdata = NULL;
	GElf_Ehdr eh;
	size_t i, nph, cap = 0, ocap = 0, shstrndx;
	int err = 0, have_symtab = 0;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph)) {
		err = -ENOEXEC;
		goto out;
	}
	f->is_dyn = eh.e_type == ET_DYN;
	for (i = 0; i < nph && f->nloads < MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->loads[f->nloads].off = ph.p_offset;
		f->loads[f->nloads].vaddr = ph.p_vaddr;
		f->loads[f->nloads].filesz = ph.p_filesz;
		f->nloads++;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			have_symtab = 1;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			err = read_table(f, elf, scn, &sh, &cap, &ocap);
		else if (sh.sh_type == SHT_NOTE && !f->build_id[0])
			read_build_id(f, scn);
		else if (sh.sh_type == SHT_PROGBITS && !elf_getshdrstrndx(elf, &shstrndx) &&
			 (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(name, ".gnu_debugdata"))
			debugdata = scn;
		if (err)
			goto out;
	}
	/* a stripped binary: its function and object symbols may survive only
	 * in MiniDebugInfo */
	if (!have_symtab && debugdata) {
		err = read_minidebuginfo(f, debugdata, &cap, &ocap);
		if (err)
			goto out;
	}
	if (f->nsyms)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_sym);
	f->syms_cap = cap;
	f->objs_cap = ocap;
	f->have_symtab = have_symtab;
out:
	if (elf)
		elf_end(elf);
	if (err) {
		cw_symfile_free(f);
		return err;
	}
	*out = f;
	return 0;
}

int cw_symfile_add_debug(struct cw_symfile *f, const char *path)
{
	int fd = cw_open_regular(path, CW_ROOT_DEBUG_MAX), err;

	if (fd < 0)
		return fd;
	err = cw_symfile_add_debug_fd(f, fd);
	close(fd);
	return err;
}

int cw_symfile_add_debug_fd(struct cw_symfile *f, int fd)
{
	struct cw_symfile *d;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	int err = 0;

	/* the debug file must be this file's: same build-id, read by the
	 * same code as any ELF (libelf reads at offsets: the descriptor is
	 * read twice) */
	err = cw_symfile_open_fd(&d, fd);
	if (err)
		return err;
	if (!f->build_id[0] || strcmp(d->build_id, f->build_id)) {
		cw_symfile_free(d);
		return -ENOEXEC;
	}
	cw_symfile_free(d);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			err = read_table(f, elf, scn, &sh, &f->syms_cap, &f->objs_cap);
			f->have_symtab = 1;
		}
	}
	if (f->nsyms)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_sym);
out:
	if (elf)
		elf_end(elf);
	return err;
}

int cw_symfile_has_symtab(const struct cw_symfile *f)
{
	return f->have_symtab;
}

void cw_symfile_free(struct cw_symfile *f)
{
	if (!f)
		return;
	free(f->syms);
	free(f->objs);
	free(f->pool);
	free(f);
}

const char *cw_symfile_build_id(const struct cw_symfile *f)
{
	return f->build_id;
}

int cw_symfile_is_dyn(const struct cw_symfile *f)
{
	return f->is_dyn;
}

int cw_symfile_offset_to_vaddr(const struct cw_symfile *f, uint64_t off, uint64_t *vaddr)
{
	int i;

	for (i = 0; i < f->nloads; i++) {
		if (off >= f->loads[i].off && off - f->loads[i].off < f->loads[i].filesz) {
			*vaddr = f->loads[i].vaddr + (off - f->loads[i].off);
			return 0;
		}
	}
	return -ENOENT;
}

int cw_symfile_find(const struct cw_symfile *f, const char *name, uint64_t *value, uint64_t *size)
{
	size_t i;

	for (i = 0; i < f->nobjs; i++)
		if (!strcmp(f->pool + f->objs[i].name, name))
			goto found_obj;
	for (i = 0; i < f->nsyms; i++)
		if (!strcmp(f->pool + f->syms[i].name, name)) {
			*value = f->syms[i].addr;
			*size = f->syms[i].size;
			return 0;
		}
	return -ENOENT;
found_obj:
	*value = f->objs[i].addr;
	*size = f->objs[i].size;
	return 0;
}

int cw_symfile_addr2sym(const struct cw_symfile *f, uint64_t vaddr, const char **name, uint64_t *off)
{
	size_t lo = 0, hi = f->nsyms;
	const struct sym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	s = &f->syms[lo - 1];
	/* A sized symbol must cover the address; an unsized one (hand-written
	 * assembly) is accepted within 64 KiB. */
	if ((s->size && vaddr - s->addr >= s->size) || (!s->size && vaddr - s->addr > 65536))
		return -ENOENT;
	*name = f->pool + s->name;
	*off = vaddr - s->addr;
	return 0;
}
