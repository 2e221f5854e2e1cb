/* Tenant filters (--cgroup, --container, --pod, --slurm-job): parsing the
 * flag and testing one cgroup against it. trace turns a filter into the
 * BPF map of allowed cgroup ids (resolve.c walks the live tree); the
 * reading commands match the cgroups table of the database. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/tenant.h"

int cw_cgpath_covers(const char *anc, const char *path)
{
	size_t n = strlen(anc);

	while (n > 1 && anc[n - 1] == '/')
		n--;
	if (n == 1 && anc[0] == '/')
		return path[0] == '/';
	return !strncmp(anc, path, n) && (path[n] == 0 || path[n] == '/');
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* An id prefix as `docker ps` or `crictl ps` shows it. */
static int container_ok(const char *v, size_t n)
{
	if (n < 4 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
			return 0;
	return 1;
}

static int pod_ok(const char *v, size_t n)
{
	return cw_k8s_name_valid(v, n, 0);
}

static int slurm_job_ok(const char *v, size_t n)
{
	return all_digits(v) && n <= 20;
}

static int namespace_ok(const char *v, size_t n)
{
	return cw_k8s_name_valid(v, n, 1);
}

/* The filters whose value is kept as typed once it passes its check. */
static const struct {
	const char *flag;
	enum cw_tenant_filter_kind kind;
	int (*ok)(const char *v, size_t n);
	const char *want;
} plain_filters[] = {
	{ "--container", CW_TF_CONTAINER, container_ok, "4-64 lower-case hex characters of a container id" },
	{ "--pod", CW_TF_POD, pod_ok, "a pod name or UID" },
	{ "--slurm-job", CW_TF_SLURM_JOB, slurm_job_ok, "a job number" },
	{ "--namespace", CW_TF_NAMESPACE, namespace_ok, "a Kubernetes namespace" },
};

int cw_tenant_filter_parse(struct cw_tenant_filter *f, const char *flag, const char *value, char *err,
			   size_t errlen)
{
	struct cw_tenant t;
	size_t n = value ? strlen(value) : 0;

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < sizeof(plain_filters) / sizeof(plain_filters[0]); i++) {
		if (strcmp(flag, plain_filters[i].flag))
			continue;
		if (!plain_filters[i].ok(value, n)) {
			snprintf(err, errlen, "bad %s \"%.80s\" (want %s)", flag, value ? value : "",
				 plain_filters[i].want);
			return -EINVAL;
		}
		f->kind = plain_filters[i].kind;
		snprintf(f->value, sizeof(f->value), "%s", value);
		return 0;
	}
	if (!strcmp(flag, "--cgroup")) {
		if (all_digits(value) && n <= 20) {
			errno = 0;
			f->id = strtoull(value, NULL, 10);
			if (errno || !f->id)
				goto bad;
			f->kind = CW_TF_CGROUP_ID;
			snprintf(f->value, sizeof(f->value), "%s", value);
			return 0;
		}
		/* A path as /proc/PID/cgroup prints it; the mount point prefix
		 * (/sys/fs/cgroup[/unified]) is accepted and dropped. */
		static const char *const mounts[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
		for (int i = 0; i < 2; i++) {
			size_t ml = strlen(mounts[i]);
			if (!strncmp(value, mounts[i], ml) && (value[ml] == '/' || value[ml] == 0)) {
				value += ml;
				break;
			}
		}
		if (!*value)
			value = "/";
		if (cw_tenant_parse(value, &t))
			goto bad;
		f->kind = CW_TF_CGROUP_PATH;
		snprintf(f->value, sizeof(f->value), "%s", value);
		return 0;
	}
	return -ENOENT;
bad:
	snprintf(err, errlen, "bad --cgroup \"%.80s\" (want a cgroup path or a cgroup v2 id)", value ? value : "");
	memset(f, 0, sizeof(*f));
	return -EINVAL;
}

int cw_tenant_match(const struct cw_tenant_filter *f, uint64_t id, const char *path, const struct cw_tenant *t)
{
	switch (f->kind) {
	case CW_TF_CGROUP_ID:
		return id == f->id;
	case CW_TF_CGROUP_PATH:
		return path && !strcmp(path, f->value);
	case CW_TF_CONTAINER:
		return t->container_id[0] && !strncmp(t->container_id, f->value, strlen(f->value));
	case CW_TF_POD:
		return (t->pod_uid[0] && !strcmp(t->pod_uid, f->value)) || (t->pod[0] && !strcmp(t->pod, f->value));
	case CW_TF_SLURM_JOB:
		return t->slurm_job[0] && !strcmp(t->slurm_job, f->value);
	case CW_TF_NAMESPACE:
		return t->ns[0] && !strcmp(t->ns, f->value);
	default:
		return 0;
	}
}

static const struct {
	const char *flag, *word, *alt;
	enum cw_tenant_filter_kind kind;
} names[] = {
	{ "--cgroup", "cgroup", NULL, CW_TF_CGROUP_PATH },
	{ "--container", "container", NULL, CW_TF_CONTAINER },
	{ "--pod", "pod", NULL, CW_TF_POD },
	{ "--slurm-job", "slurm-job", "slurm_job", CW_TF_SLURM_JOB },
	{ "--namespace", "namespace", NULL, CW_TF_NAMESPACE },
};

int cw_tenant_filter_add(struct cw_tenant_filter *v, int *n, int max, const char *name, const char *value,
			 char *err, size_t errlen)
{
	const char *flag = NULL;
	int rc;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !flag; i++)
		if (!strcmp(name, names[i].flag) || !strcmp(name, names[i].word) ||
		    (names[i].alt && !strcmp(name, names[i].alt)))
			flag = names[i].flag;
	if (!flag)
		return -ENOENT;
	if (*n >= max) {
		snprintf(err, errlen, "at most %d tenant filters", max);
		return -EINVAL;
	}
	rc = cw_tenant_filter_parse(&v[*n], flag, value ? value : "", err, errlen);
	if (!rc)
		(*n)++;
	return rc;
}

const char *cw_tenant_filter_flag(const struct cw_tenant_filter *f)
{
	if (f->kind == CW_TF_CGROUP_ID)
		return "--cgroup";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].kind == f->kind)
			return names[i].flag;
	return "";
}
