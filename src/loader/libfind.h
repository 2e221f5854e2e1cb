/* libfind: installed copies of the traced libraries and of CPython, found
 * on disk in the standard places (check; trace's --cuda-lib help).
 *
 * discover.h answers "which copies do running processes map"; this answers
 * "which copies exist", before anything runs. Files are stat()ed and their
 * ELF tables read; nothing is executed, not even ldconfig: its cache is
 * built from /etc/ld.so.conf, which is read instead. */
#ifndef CW_LOADER_LIBFIND_H
#define CW_LOADER_LIBFIND_H

#include <limits.h>
#include <stdint.h>

#include "loader/discover.h"

struct cw_found_lib {
	enum cw_lib_kind kind;
	char path[PATH_MAX];  /* where it was found first */
	char real[PATH_MAX];  /* symlinks resolved */
	char version[64];     /* from the file name ("13", "2.28.9", "580.65.06"); "" unknown */
	char detail[128];     /* a fuller version read from the file, e.g. "NCCL version 2.28.9+cuda13.0" */
	char soname[128];
	int stub;             /* a link-time stub (.../stubs/), not a usable driver */
	uint64_t dev, ino;
};

typedef int (*cw_found_lib_fn)(void *ctx, const struct cw_found_lib *lib);

/* Calls fn once per distinct file (device + inode) of libcudart, libcuda
 * and libnccl under: $LD_LIBRARY_PATH, the /etc/ld.so.conf directories,
 * the system library directories, /usr/local/cuda*{/lib64,/lib,
 * /targets/STAR/lib} and their stubs/, conda prefixes and pip wheels
 * (site-packages/nvidia/STAR/lib of every Python found). root prefixes
 * every absolute path searched (NULL or "" for /; tests use a fake tree).
 * Returns the number of files, or what fn returned when non-zero. */
int cw_libfind_cuda(const char *root, cw_found_lib_fn fn, void *ctx);

struct cw_python_install {
	int major, minor;
	char version[32];     /* "3.12.1" from a pyenv path, else "3.12" */
	char path[PATH_MAX];  /* libpython3.X.so.1.0, or the executable of a static build */
	char exe[PATH_MAX];   /* the interpreter executable, "" unknown */
	int shared;           /* the runtime lives in libpython (path) */
	int exports_runtime;  /* _PyRuntime in path's .dynsym: frames are findable */
	uint64_t dev, ino;
};

typedef int (*cw_python_fn)(void *ctx, const struct cw_python_install *py);

/* CPython 3 installations: pyenv ($PYENV_ROOT or HOME/.pyenv)
 * versions/STAR/lib/libpython3.X.so.1.0, and python3.X executables in
 * /usr/bin and /usr/local/bin, the latter classified as shared (they link
 * a libpython3.X.so found next to the system libraries) or static (they
 * export _PyRuntime themselves). home: the HOME to search (NULL: $HOME).
 * Returns the number found or fn's non-zero value. */
int cw_libfind_python(const char *root, const char *home, cw_python_fn fn, void *ctx);

#endif
