/* Opening a file inside another process's root (/proc/PID/root) on that
 * process's behalf: its debug files, build-id paths, the ELF objects it
 * maps, its interpreter. Those paths are the process's to choose (a user
 * in its own user and mount namespaces can mount a tmpfs anywhere in its
 * view and plant FIFOs and links there), and the agent runs as root, so:
 *  - the path is resolved inside the root, links included: a link never
 *    leads out of it (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
 *    or a walk by hand, one O_NOFOLLOW component at a time, where the
 *    kernel has no openat2);
 *  - what the path names is first opened O_PATH (no open side effects:
 *    a FIFO, device or socket is never opened for reading) and used only
 *    when it is a regular file within the caller's size bound; it is then
 *    reopened O_RDONLY | O_NONBLOCK, so no open waits on the process. */
#ifndef CW_UTIL_ROOT_OPEN_H
#define CW_UTIL_ROOT_OPEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounds for the callers: an ELF object a process maps (libtorch_cuda is
 * ~1.5 GiB), and a separate debug file. */
#define CW_ROOT_ELF_MAX (4ull << 30)
#define CW_ROOT_DEBUG_MAX (4ull << 30)

/* Opens path (absolute or not: it is taken from the root) inside the
 * directory rootfd, as the process whose root it is would see it, links
 * resolved within rootfd. Returns a read-only descriptor (O_CLOEXEC) of a
 * regular file of at most max_size bytes, or -errno: -EINVAL when it is
 * not a regular file, -EFBIG when larger, -ELOOP for too many links. */
int cw_root_openat(int rootfd, const char *path, uint64_t max_size);

/* The same by the hand walk alone (the fallback; the tests and the fuzz
 * target check that both agree). */
int cw_root_openat_walk(int rootfd, const char *path, uint64_t max_size);

/* cw_root_openat inside /proc/PID/root. */
int cw_proc_root_open(pid_t pid, const char *path, uint64_t max_size);

/* Opens a path of the agent's own (a host path, or a /proc/PID/map_files
 * link that names exactly the file a process maps) under the same rule:
 * O_PATH first, a regular file within max_size, then read-only and
 * non-blocking. Returns the descriptor or -errno. */
int cw_open_regular(const char *path, uint64_t max_size);

/* The build-id debug file's path inside a root,
 * "/usr/lib/debug/.build-id/xx/yyyy.debug", for a hex build-id (lower
 * case, 2 to 80 digits, even count). Returns 0, -EINVAL for an id that is
 * not that, -ENAMETOOLONG. */
int cw_build_id_debug_path(const char *hex_id, char *out, size_t len);

/* The pure part of the hand walk: the components still to resolve, with
 * link targets spliced in front as they are met. */
#define CW_WALK_MAX_LINKS 40
#define CW_WALK_PATH_MAX 4096

struct cw_pathwalk {
	char buf[CW_WALK_PATH_MAX];
	size_t pos, len;
	int links;
};

enum { CW_WALK_END = 0, CW_WALK_NAME = 1, CW_WALK_UP = 2 };

/* Returns 0 or -ENAMETOOLONG. */
int cw_pathwalk_init(struct cw_pathwalk *w, const char *path);
/* The next component: CW_WALK_NAME with the name (never empty, ".", ".."
 * nor holding a '/') in name, CW_WALK_UP for "..", CW_WALK_END when none
 * is left, or -ENAMETOOLONG for a name over len - 1 bytes. "." and empty
 * components are skipped. */
int cw_pathwalk_next(struct cw_pathwalk *w, char *name, size_t len);
/* Whether a component other than "." remains (the one just taken was the
 * last when not). */
int cw_pathwalk_more(const struct cw_pathwalk *w);
/* The component just taken was a link to target: target's components come
 * next. Returns 1 when target is absolute (the walk goes back to the
 * root), 0 when relative (it goes on from the link's directory), -ELOOP
 * past CW_WALK_MAX_LINKS links or for an empty target, -ENAMETOOLONG. */
int cw_pathwalk_link(struct cw_pathwalk *w, const char *target);

#endif
