/* Cgroup path -> runtime, container id, pod UID and QoS, Slurm job, unit.
 * The schemes are those of kubelet 1.2x (systemd and cgroupfs drivers),
 * containerd 1.x/2.x, CRI-O, Docker (runc's systemd and cgroupfs drivers),
 * Podman 4/5 and Slurm 23 (cgroup/v1 and cgroup/v2 plugins). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/tenant.h"

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* A container id: 12 (short) to 64 (full) lower-case hex characters. */
static int container_id_ok(const char *s, size_t n)
{
	return n >= 12 && n <= 64 && is_hex(s, n);
}

static int has_prefix(const char *s, size_t n, const char *p, size_t *plen)
{
	size_t l = strlen(p);

	*plen = l;
	return n > l && !memcmp(s, p, l);
}

static int has_suffix(const char *s, size_t n, const char *sfx)
{
	size_t l = strlen(sfx);

	return n > l && !memcmp(s + n - l, sfx, l);
}

/* "<uid>" as the kubelet writes it: dashes in cgroupfs form, underscores
 * in systemd slice names (a dash separates slice levels there). Static
 * pods' UIDs are a 32-hex config hash without dashes. */
static int set_pod_uid(struct cw_tenant *t, const char *s, size_t n)
{
	char u[40];

	if (n < 32 || n > 36)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i] == '_' ? '-' : s[i];
		if (!(c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
		u[i] = c;
	}
	u[n] = 0;
	memcpy(t->pod_uid, u, n + 1);
	return 1;
}

static void set_container(struct cw_tenant *t, const char *runtime, const char *id, size_t n)
{
	snprintf(t->runtime, sizeof(t->runtime), "%s", runtime);
	memcpy(t->container_id, id, n);
	t->container_id[n] = 0;
}

static void set_str(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = 0;
}

/* "<prefix><id><suffix>" with suffix ".scope" or none. */
static int scoped_id(const char *c, size_t n, const char *prefix, const char **id, size_t *idn)
{
	size_t pl;

	if (!has_prefix(c, n, prefix, &pl))
		return 0;
	*id = c + pl;
	*idn = n - pl;
	if (has_suffix(c, n, ".scope"))
		*idn -= 6;
	return container_id_ok(*id, *idn);
}

struct pstate {
	int kube;      /* inside kubepods */
	int docker;    /* previous component was "docker" (cgroupfs driver) */
	int libpod;    /* inside libpod_parent */
};

static void component(struct pstate *ps, struct cw_tenant *t, const char *c, size_t n)
{
	const char *id;
	size_t idn, pl;
	int prev_docker = ps->docker;

	ps->docker = 0;
	/* Kubernetes pods: kubepods[.slice], QoS levels, pod<uid>. */
	if ((n == 8 && !memcmp(c, "kubepods", 8)) || (n == 14 && !memcmp(c, "kubepods.slice", 14))) {
		ps->kube = 1;
		snprintf(t->qos, sizeof(t->qos), "guaranteed");
		return;
	}
	if (ps->kube) {
		static const char *const q[] = { "burstable", "besteffort" };
		for (int i = 0; i < 2; i++) {
			char slice[48];
			snprintf(slice, sizeof(slice), "kubepods-%s.slice", q[i]);
			if ((n == strlen(q[i]) && !memcmp(c, q[i], n)) || (n == strlen(slice) && !memcmp(c, slice, n))) {
				snprintf(t->qos, sizeof(t->qos), "%s", q[i]);
				return;
			}
		}
		/* kubepods-pod<uid>.slice, kubepods-<qos>-pod<uid>.slice, pod<uid> */
		if (has_prefix(c, n, "kubepods-", &pl) && has_suffix(c, n, ".slice")) {
			const char *r = c + pl;
			size_t rn = n - pl - 6, ql;
			for (int i = 0; i < 2; i++) {
				char lvl[24];
				snprintf(lvl, sizeof(lvl), "%s-", q[i]);
				if (has_prefix(r, rn, lvl, &ql)) {
					snprintf(t->qos, sizeof(t->qos), "%s", q[i]);
					r += ql;
					rn -= ql;
					break;
				}
			}
			if (has_prefix(r, rn, "pod", &ql) && set_pod_uid(t, r + ql, rn - ql))
				return;
		}
		if (has_prefix(c, n, "pod", &pl) && set_pod_uid(t, c + pl, n - pl))
			return;
	}
	if (scoped_id(c, n, "cri-containerd-", &id, &idn)) {
		set_container(t, "containerd", id, idn);
		return;
	}
	if (has_prefix(c, n, "crio-conmon-", &pl))
		return; /* the monitor of a container, not the container */
	if (scoped_id(c, n, "crio-", &id, &idn)) {
		set_container(t, "cri-o", id, idn);
		return;
	}
	if (scoped_id(c, n, "docker-", &id, &idn)) {
		set_container(t, "docker", id, idn);
		return;
	}
	if (has_prefix(c, n, "libpod-conmon-", &pl))
		return;
	if (scoped_id(c, n, "libpod-", &id, &idn)) {
		set_container(t, "podman", id, idn);
		return;
	}
	if (prev_docker && container_id_ok(c, n)) {
		set_container(t, "docker", c, n);
		return;
	}
	if (n == 6 && !memcmp(c, "docker", 6)) {
		ps->docker = 1;
		return;
	}
	if (n == 13 && !memcmp(c, "libpod_parent", 13)) {
		ps->libpod = 1;
		return;
	}
	/* cgroupfs kubelet: the container directory is the bare id under the
	 * pod (containerd); the runtime is not in the name. */
	if (ps->kube && t->pod_uid[0] && container_id_ok(c, n)) {
		set_container(t, "cri", c, n);
		return;
	}
	/* Slurm: job_<n>, step_<s> (cgroup/v1: /slurm/uid_<u>/job_<n>/step_<s>;
	 * cgroup/v2: .../slurmstepd.scope/job_<n>/step_<s>). */
	if (has_prefix(c, n, "job_", &pl) && n - pl < sizeof(t->slurm_job)) {
		size_t i;
		for (i = pl; i < n && c[i] >= '0' && c[i] <= '9'; i++)
			;
		if (i == n) {
			set_str(t->slurm_job, sizeof(t->slurm_job), c + pl, n - pl);
			t->slurm_step[0] = 0;
			t->container_id[0] = 0;
			snprintf(t->runtime, sizeof(t->runtime), "slurm");
		}
		return;
	}
	if (t->slurm_job[0] && has_prefix(c, n, "step_", &pl) && n - pl < sizeof(t->slurm_step)) {
		for (size_t i = pl; i < n; i++)
			if (!((c[i] >= '0' && c[i] <= '9') || (c[i] >= 'a' && c[i] <= 'z') || c[i] == '_'))
				return;
		set_str(t->slurm_step, sizeof(t->slurm_step), c + pl, n - pl);
		return;
	}
	if (has_suffix(c, n, ".service") || has_suffix(c, n, ".scope") || has_suffix(c, n, ".slice")) {
		if (n < sizeof(t->unit))
			set_str(t->unit, sizeof(t->unit), c, n);
		if (!t->runtime[0] && !t->pod_uid[0] && !has_suffix(c, n, ".slice"))
			snprintf(t->runtime, sizeof(t->runtime), "systemd");
	}
}

int cw_tenant_parse(const char *path, struct cw_tenant *t)
{
	struct pstate ps = { 0 };
	size_t len, i, start;

	memset(t, 0, sizeof(*t));
	if (!path || path[0] != '/')
		return -EINVAL;
	len = strnlen(path, CW_CGPATH_MAX + 1);
	if (len > CW_CGPATH_MAX)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if ((unsigned char)path[i] < 0x20 || (unsigned char)path[i] > 0x7e)
			return -EINVAL;
	for (start = 1; start <= len; start = i + 1) {
		for (i = start; i < len && path[i] != '/'; i++)
			;
		size_t n = i - start;
		const char *c = path + start;
		if (n == 0)
			continue; /* "//" or the root */
		if (n > CW_CGNAME_MAX || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			goto bad;
		component(&ps, t, c, n);
	}
	/* A systemd slice with nothing inside it names no tenant of its own
	 * (the unit stays for display); a pod-level cgroup names the pod. */
	return 0;
bad:
	memset(t, 0, sizeof(*t));
	return -EINVAL;
}

int cw_k8s_name_valid(const char *s, size_t len, int label)
{
	if (len == 0 || len > (label ? 63u : 253u))
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && !(c == '-' || (!label && c == '.')))
			return 0;
		if ((i == 0 || i == len - 1) && !alnum)
			return 0;
	}
	return 1;
}

void cw_tenant_key(const struct cw_tenant *t, const char *path, char *buf, size_t len)
{
	if (t->pod_uid[0])
		snprintf(buf, len, "pod:%s", t->pod_uid);
	else if (t->container_id[0])
		snprintf(buf, len, "container:%s", t->container_id);
	else if (t->slurm_job[0])
		snprintf(buf, len, "slurm:%s", t->slurm_job);
	else if (t->unit[0] && strcmp(t->runtime, "systemd") == 0)
		snprintf(buf, len, "unit:%s", t->unit);
	else
		snprintf(buf, len, "cgroup:%s", path ? path : "");
}
