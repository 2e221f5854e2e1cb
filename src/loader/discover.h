/* discover: which processes map which copies of libcudart, libcuda and
 * libnccl, read from /proc/PID/maps.
 *
 * A "copy" is one file (device + inode): uprobes attach to the inode, so
 * every process mapping the same file is covered by one attachment, and a
 * second copy (a conda env, a pip wheel under site-packages/nvidia, a
 * container image) needs its own. Files inside a container's mount
 * namespace are reached through /proc/PID/root. Nothing here runs or maps
 * the libraries; they are only stat()ed. */
#ifndef CW_LOADER_DISCOVER_H
#define CW_LOADER_DISCOVER_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

enum cw_lib_kind {
	CW_LIB_CUDART = 0, /* libcudart.so*, incl. wheel-renamed libcudart-<hash>.so* */
	CW_LIB_CUDA,       /* libcuda.so* (the driver) */
	CW_LIB_NCCL,       /* libnccl.so* */
	CW_LIB_NKINDS
};

struct cw_lib_copy {
	enum cw_lib_kind kind;
	char path[PATH_MAX];   /* openable by the tracer (/proc/PID/root/... or map_files) */
	char mapped[PATH_MAX]; /* the path as the process maps it */
	uint64_t dev, ino;     /* identity of the file */
	uint32_t pid;          /* a process mapping it */
};

/* "cudart", "cuda", "nccl". */
const char *cw_lib_kind_name(enum cw_lib_kind k);

/* Kind of a library by its file name (basename of path), or -1. */
int cw_lib_kind_of(const char *path);

/* The version in a library file name after ".so.": "libcudart.so.13.0.96"
 * -> "13.0.96", "libcuda.so.580.65.06" -> "580.65.06". Resolves symlinks
 * first. Returns 0, or -ENOENT when the name carries none. */
int cw_lib_version(const char *path, char *buf, size_t len);

typedef int (*cw_discover_fn)(void *ctx, const struct cw_lib_copy *lib);

/* Calls fn once per distinct hooked library copy mapped by pid. fn returns
 * non-zero to stop (that value is returned). Returns the number of copies
 * seen, -ENOENT when the process is gone, or -errno. */
int cw_discover_pid(uint32_t pid, cw_discover_fn fn, void *ctx);

/* Every process under /proc: calls fn per (process, library copy) pair.
 * Returns the number of processes that map at least one hooked library. */
int cw_discover_all(cw_discover_fn fn, void *ctx);

/* A device number in the kernel's internal encoding (major << 20 |
 * minor): what BPF reads from a superblock's s_dev. dev is a userspace
 * dev_t (stat's st_dev, or makedev() of a maps line). */
uint64_t cw_kdev(uint64_t dev);

/* Finds, in pid's maps, the mapped file whose device (kernel encoding,
 * cw_kdev) and inode are kdev/ino, and writes a path the tracer can open
 * (as cw_lib_copy.path) into out. Returns 0, -ENOENT when pid does not
 * map it (or is gone), or -errno. */
int cw_discover_find_file(uint32_t pid, uint64_t kdev, uint64_t ino, char *out, size_t outlen);

/* Whether a process exists (kill(pid, 0) semantics without signals). */
int cw_pid_exists(uint32_t pid);

#endif
