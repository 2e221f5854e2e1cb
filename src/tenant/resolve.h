/* Finding tenants on the live host: the cgroup v2 mount, a process's
 * cgroup, cgroup v2 ids (the directory's inode number: the kernfs node id
 * bpf_get_current_cgroup_id returns) and the pod name and namespace a
 * Kubernetes container's environment carries (downward API). Everything
 * read here is another process's or the kernel's text: capped and
 * validated (tenant.h). */
#ifndef CW_TENANT_RESOLVE_H
#define CW_TENANT_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "tenant/tenant.h"

/* /proc/PID/environ is read up to this many bytes. */
#define CW_ENVIRON_MAX (256u << 10)
/* A tree walk stops after this many cgroups and below this depth. */
#define CW_CGWALK_MAX 65536
#define CW_CGWALK_DEPTH 32

/* One resolved cgroup. */
struct cw_cgroup_info {
	uint64_t id;
	char path[CW_CGPATH_MAX + 1];
	struct cw_tenant t;
};

/* The cgroup v2 mount point: /sys/fs/cgroup on a unified host,
 * /sys/fs/cgroup/unified on a hybrid one; NULL when neither is cgroup2.
 * Detected once. */
const char *cw_cgroup2_root(void);

/* The host's cgroup layout, which decides where a tenant's CPU limits are
 * written: pure v2 (cpu.max, cpu.weight under /sys/fs/cgroup), hybrid
 * (v1 controllers such as /sys/fs/cgroup/cpu, a controller-less v2 tree
 * at /sys/fs/cgroup/unified) or v1 only. Stored per trace session as the
 * counter host.cgroup_layout. */
enum cw_cgroup_layout {
	CW_CGROUP_LEGACY = 0,
	CW_CGROUP_HYBRID = 1,
	CW_CGROUP_UNIFIED = 2,
};
int cw_cgroup_layout(void);

/* pid's cgroup v2 path ("0::" line of /proc/PID/cgroup). Returns 0,
 * -ENOENT (no such process or no v2 line), -EINVAL (malformed). */
int cw_pid_cgroup_path(uint32_t pid, char *buf, size_t len);
/* pid's cgroup v1 path in the hierarchy that has controller (e.g. "cpu"
 * in "4:cpu,cpuacct:/docker/..."). Returns 0 or -ENOENT. */
int cw_pid_cgroup_v1_path(uint32_t pid, const char *controller, char *buf, size_t len);
/* The cgroup v2 id of path (relative to root). Returns 0 or -errno. */
int cw_cgroup_id_of(const char *root, const char *path, uint64_t *id);
/* Fills t->pod and t->ns from pid's POD_NAME / POD_NAMESPACE, or HOSTNAME
 * for the pod name when t is a pod's (the kubelet sets a pod's hostname to
 * its name). Invalid names are ignored. Returns 0 or -errno. */
int cw_pid_pod_env(uint32_t pid, struct cw_tenant *t);
/* The first process listed in the cgroup's cgroup.procs, 0 when none. */
uint32_t cw_cgroup_first_pid(const char *root, const char *path);

/* Identity of pid's cgroup: path, id, parsed tenant and environment.
 * want_id, when not 0, is the id the kernel reported; a process that has
 * moved since gives -ESTALE (the caller walks the tree instead). */
int cw_tenant_resolve_pid(uint32_t pid, uint64_t want_id, struct cw_cgroup_info *out);

/* Walks the v2 tree under root pre-order; cb gets every cgroup (root "/"
 * included) and returns 0 to go on, > 0 to stop. Returns the number of
 * cgroups visited or -errno. */
int cw_cgroup_walk(const char *root, int (*cb)(void *ctx, uint64_t id, const char *path, int depth), void *ctx);
/* The path of cgroup id by a tree walk. Returns 0 or -ENOENT. */
int cw_cgroup_path_of_id(const char *root, uint64_t id, char *buf, size_t len);

#endif
