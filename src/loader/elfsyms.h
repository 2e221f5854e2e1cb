/* ELF symbol tables of shared libraries and executables, read with libelf.
 *
 * Used by `check` (which hooked symbols does this libcudart export? is this
 * python executable a static build?) and by trace (where does a symbol live
 * in the file, for a uprobe). The files are only read, never mapped
 * executable or run: a library found on disk is untrusted input. */
#ifndef CW_LOADER_ELFSYMS_H
#define CW_LOADER_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

struct cw_elf;

struct cw_elf_sym {
	const char *name; /* valid until cw_elf_close() */
	uint64_t value;   /* st_value: virtual address in the object */
	uint64_t size;
	int type;         /* STT_FUNC, STT_OBJECT, ... */
	int bind;         /* STB_GLOBAL, STB_WEAK, ... */
};

/* Opens path read-only. Returns 0, -ENOENT/-EACCES (open failed) or
 * -ENOEXEC (not an ELF file, or truncated). */
int cw_elf_open(struct cw_elf **out, const char *path);
void cw_elf_close(struct cw_elf *e);

/* 1 when the object is for the CPU this causeway runs on (ELF machine
 * EM_X86_64 or EM_AARCH64), else 0. A uprobe writes this CPU's breakpoint
 * instruction into the file's pages in every process that maps them: in a
 * foreign-architecture file (an arm64 ld.so or libcudart under qemu-user
 * or binfmt_misc) that is a corrupt instruction, not a probe. */
int cw_elf_native(const struct cw_elf *e);

/* DT_SONAME, or "" when the object has none. */
const char *cw_elf_soname(const struct cw_elf *e);

/* Calls fn for every defined symbol of .dynsym (dynamic = 1) or .symtab
 * (dynamic = 0); undefined imports are skipped. fn returns non-zero to
 * stop, and that value is returned. Returns 0 when done, -ENOENT when the
 * table is absent. */
int cw_elf_foreach_sym(struct cw_elf *e, int dynamic,
		       int (*fn)(const struct cw_elf_sym *sym, void *arg), void *arg);

/* Looks a defined symbol up by exact name in .dynsym, falling back to
 * .symtab. Returns 0 and fills sym, or -ENOENT. Versioned names are
 * matched without their "@VERSION" suffix. */
int cw_elf_find_sym(struct cw_elf *e, const char *name, struct cw_elf_sym *sym);

/* Converts a symbol's virtual address to its offset in the file, via the
 * PT_LOAD segment holding it (what a uprobe attach needs). Returns 0 or
 * -ENOENT when no executable segment covers addr. */
int cw_elf_vaddr_to_offset(struct cw_elf *e, uint64_t vaddr, uint64_t *offset);

/* Finds the first NUL-terminated string starting with prefix in the
 * read-only data sections (.rodata), copying it (truncated) into buf.
 * Libraries print their version from such a string ("NCCL version
 * 2.28.9+cuda13.0"), which reads the version without running the code.
 * Returns 0 or -ENOENT. */
int cw_elf_find_rodata_string(struct cw_elf *e, const char *prefix, char *buf, size_t len);

#endif
