/* One ELF file's symbols for address lookup: function symbols from .symtab
 * and .dynsym, sorted by address, the PT_LOAD layout (file offset <->
 * virtual address) and the GNU build-id. Read with libelf; the file is
 * untrusted input and is never mapped executable or run. */
#ifndef CW_SYMBOL_SYMFILE_H
#define CW_SYMBOL_SYMFILE_H

#include <stddef.h>
#include <stdint.h>

struct cw_symfile;

/* Opens and indexes path, a path of the agent's own (a process's files
 * are opened with util/root_open.h and given as a descriptor). Only a
 * regular file is read (util/root_open.h cw_open_regular). Returns 0,
 * -ENOENT/-EACCES/-EINVAL/-EFBIG, or -ENOEXEC for a file that is not a
 * readable ELF object. */
int cw_symfile_open(struct cw_symfile **out, const char *path);
/* The same from an open descriptor, which stays the caller's. */
int cw_symfile_open_fd(struct cw_symfile **out, int fd);
void cw_symfile_free(struct cw_symfile *f);

/* Whether the file (or a debug file added below) had a .symtab: without
 * one, its symbols are .dynsym's and MiniDebugInfo's only. */
int cw_symfile_has_symtab(const struct cw_symfile *f);

/* Adds the .symtab of path, a separate debug file of f
 * (objcopy --only-keep-debug; Debian's -dbgsym packages), whose addresses
 * are f's own. Refused (-ENOEXEC) unless its build-id is f's. Returns 0 or
 * -errno. */
int cw_symfile_add_debug(struct cw_symfile *f, const char *path);
/* The same from an open descriptor, which stays the caller's. */
int cw_symfile_add_debug_fd(struct cw_symfile *f, int fd);

/* Hex GNU build-id ("" when the file has none). */
const char *cw_symfile_build_id(const struct cw_symfile *f);
/* 1 for ET_DYN (shared object or PIE), 0 for ET_EXEC. */
int cw_symfile_is_dyn(const struct cw_symfile *f);

/* The virtual address a file offset is loaded at, through the PT_LOAD
 * segment holding it. Returns 0 or -ENOENT. */
int cw_symfile_offset_to_vaddr(const struct cw_symfile *f, uint64_t off, uint64_t *vaddr);

/* Finds a data or function symbol by exact name (.dynsym first, then
 * .symtab). Returns 0 or -ENOENT. */
int cw_symfile_find(const struct cw_symfile *f, const char *name, uint64_t *value, uint64_t *size);

/* The function containing vaddr (or the nearest one below it when sizes
 * are missing). *name stays valid until cw_symfile_free. Returns 0 or
 * -ENOENT. */
int cw_symfile_addr2sym(const struct cw_symfile *f, uint64_t vaddr, const char **name, uint64_t *off);

#endif
