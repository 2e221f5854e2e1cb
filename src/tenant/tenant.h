/* Tenant identity: what a cgroup path says about who runs in it.
 *
 * Container runtimes, the kubelet, systemd and Slurm each name the cgroups
 * they create after the workload (docs/tenants.md lists the schemes):
 *
 *   /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
 *   /kubepods/besteffort/pod<uid>/<id>                 (kubelet cgroupfs driver)
 *   /kubepods.slice/.../crio-<id>.scope                (CRI-O)
 *   /system.slice/docker-<id>.scope, /docker/<id>      (Docker, systemd and cgroupfs drivers)
 *   /machine.slice/libpod-<id>.scope, /libpod_parent/libpod-<id>   (Podman)
 *   /system.slice/slurmstepd.scope/job_<n>/step_<s>, /slurm/uid_<u>/job_<n>/step_<s>
 *   /system.slice/nginx.service, /user.slice/user-1000.slice/session-7.scope
 *
 * cw_tenant_parse is pure (no file system) so every scheme, and every
 * malformed or hostile path, is unit-tested; src/tenant/resolve.c finds
 * the paths (cgroup v2 ids, /proc/PID/cgroup) and the pod name and
 * namespace a container's environment carries. */
#ifndef CW_TENANT_TENANT_H
#define CW_TENANT_TENANT_H

#include <stddef.h>
#include <stdint.h>

/* Longest cgroup path accepted (the kernel's PATH_MAX); longer is refused. */
#define CW_CGPATH_MAX 4096
/* Longest path component (NAME_MAX). */
#define CW_CGNAME_MAX 255

struct cw_tenant {
	/* "containerd", "cri-o", "cri" (kubelet cgroupfs driver: a bare id,
	 * runtime not named), "docker", "podman", "slurm", "systemd", or ""
	 * when the path names none of them. */
	char runtime[16];
	char container_id[72]; /* lower-case hex, 12..64 chars; "" none */
	char pod_uid[40];      /* with dashes; "" none */
	char qos[12];          /* "guaranteed", "burstable", "besteffort"; "" unknown */
	char slurm_job[24];    /* digits; "" none */
	char slurm_step[24];   /* "0", "batch", "extern", ...; "" none */
	char unit[128];        /* innermost systemd unit (.service/.scope/.slice); "" none */
	/* From the container's environment (resolve.c), never from the path. */
	char pod[254];
	char ns[64];
};

/* Parses path (absolute, as /proc/PID/cgroup prints it) into t (zeroed
 * first). Returns 0, or -EINVAL for a path that is too long, relative,
 * has a component over CW_CGNAME_MAX, a "." or ".." component, or bytes
 * outside printable ASCII: such a path identifies nothing and is never
 * stored as an identity. Unknown but well-formed paths return 0 with
 * runtime "". */
int cw_tenant_parse(const char *path, struct cw_tenant *t);

/* A name the Kubernetes downward API could have set: a DNS-1123 subdomain
 * (pod names: <= 253 of a-z 0-9 - ., alphanumeric at both ends) or, with
 * label set, a DNS-1123 label (namespaces: <= 63, no dots). */
int cw_k8s_name_valid(const char *s, size_t len, int label);

/* Whether a tenant was identified beyond "some cgroup". */
static inline int cw_tenant_named(const struct cw_tenant *t)
{
	return t->runtime[0] || t->pod_uid[0];
}

/* What a filter names; cw_tenant_match tests one cgroup against it. */
enum cw_tenant_filter_kind {
	CW_TF_NONE = 0,
	CW_TF_CGROUP_PATH, /* --cgroup PATH: the cgroup and its descendants */
	CW_TF_CGROUP_ID,   /* --cgroup ID */
	CW_TF_CONTAINER,   /* --container ID-PREFIX (at least 4 hex chars) */
	CW_TF_POD,         /* --pod NAME|UID */
	CW_TF_SLURM_JOB,   /* --slurm-job ID */
	CW_TF_NAMESPACE,   /* --namespace NS (reading commands only: a name from the store) */
};

/* Filters one command, request or tool call may give (repeatable; any one
 * matching is enough). */
#define CW_TENANT_FILTERS_MAX 8

struct cw_tenant_filter {
	enum cw_tenant_filter_kind kind;
	char value[CW_CGPATH_MAX];
	uint64_t id; /* CW_TF_CGROUP_ID */
};

/* Parses a flag (e.g. "--container") and its value into f. Returns 0, or
 * -EINVAL with a reason in err ("bad --container ..."). A flag that is not
 * a tenant filter returns -ENOENT. */
int cw_tenant_filter_parse(struct cw_tenant_filter *f, const char *flag, const char *value, char *err,
			   size_t errlen);
/* Appends one filter to v[0..*n) (at most max): name is a flag
 * ("--container") or the same word as a query parameter or tool argument
 * ("container", "slurm_job"). The one parser behind every command, route
 * and tool that takes tenant filters. Returns 0, -ENOENT when name is
 * not a tenant filter, -EINVAL (err filled) for a bad value or too many. */
int cw_tenant_filter_add(struct cw_tenant_filter *v, int *n, int max, const char *name, const char *value,
			 char *err, size_t errlen);
/* The flag a filter was given as ("--container"), for forwarding it. */
const char *cw_tenant_filter_flag(const struct cw_tenant_filter *f);

/* Whether one cgroup (its id, path and identity, pod name included when
 * known) matches f itself (descendants are the caller's: a path under a
 * matched path matches too). */
int cw_tenant_match(const struct cw_tenant_filter *f, uint64_t id, const char *path, const struct cw_tenant *t);
/* Whether path is desc or a descendant of it ("/a" covers "/a" and "/a/b"
 * but not "/ab"). */
int cw_cgpath_covers(const char *anc, const char *path);

/* The tenant a cgroup belongs to, as one comparable string: "pod:<uid>",
 * "container:<id>", "slurm:<job>", "unit:<name>", else "cgroup:<path>".
 * Two cgroups with different keys are different tenants. */
void cw_tenant_key(const struct cw_tenant *t, const char *path, char *buf, size_t len);

#endif
