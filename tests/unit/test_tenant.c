/* Tenant identity from cgroup paths: every runtime's naming scheme, the
 * filters, and paths that must identify nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/tenant.h"

#define ID64 "3f2b9c0d1e4a5b6c7d8e9f00112233445566778899aabbccddeeff0011223344"
#define UID "7c1e2a44-9b1d-4e5f-8a6b-0c1d2e3f4a5b"
#define UID_ "7c1e2a44_9b1d_4e5f_8a6b_0c1d2e3f4a5b"

static struct cw_tenant parse_ok(const char *path)
{
	struct cw_tenant t;

	assert_int_equal(cw_tenant_parse(path, &t), 0);
	return t;
}

static void test_containerd_systemd(void **state)
{
	struct cw_tenant t;

	(void)state;
	t = parse_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		     ".slice/cri-containerd-" ID64 ".scope");
	assert_string_equal(t.runtime, "containerd");
	assert_string_equal(t.container_id, ID64);
	assert_string_equal(t.pod_uid, UID);
	assert_string_equal(t.qos, "burstable");
	t = parse_ok("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice");
	assert_string_equal(t.runtime, "");
	assert_string_equal(t.pod_uid, UID);
	assert_string_equal(t.qos, "besteffort");
	/* Guaranteed pods sit directly under kubepods.slice. */
	t = parse_ok("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID64 ".scope");
	assert_string_equal(t.qos, "guaranteed");
	assert_string_equal(t.pod_uid, UID);
	assert_string_equal(t.runtime, "containerd");
}

static void test_cgroupfs_kubelet(void **state)
{
	struct cw_tenant t;

	(void)state;
	t = parse_ok("/kubepods/burstable/pod" UID "/" ID64);
	assert_string_equal(t.runtime, "cri");
	assert_string_equal(t.container_id, ID64);
	assert_string_equal(t.pod_uid, UID);
	assert_string_equal(t.qos, "burstable");
	t = parse_ok("/kubepods/pod" UID "/" ID64);
	assert_string_equal(t.qos, "guaranteed");
	/* A bare id outside a pod is nobody's container. */
	t = parse_ok("/kubepods/burstable/" ID64);
	assert_string_equal(t.runtime, "");
	assert_string_equal(t.container_id, "");
	/* Static pods: a 32-hex config hash. */
	t = parse_ok("/kubepods/besteffort/pod0123456789abcdef0123456789abcdef/" ID64);
	assert_string_equal(t.pod_uid, "0123456789abcdef0123456789abcdef");
}

static void test_crio_docker_podman(void **state)
{
	struct cw_tenant t;

	(void)state;
	t = parse_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID64 ".scope");
	assert_string_equal(t.runtime, "cri-o");
	assert_string_equal(t.container_id, ID64);
	/* conmon is the monitor, not the container. */
	t = parse_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-conmon-" ID64 ".scope");
	assert_string_equal(t.container_id, "");
	t = parse_ok("/system.slice/docker-" ID64 ".scope");
	assert_string_equal(t.runtime, "docker");
	assert_string_equal(t.container_id, ID64);
	assert_string_equal(t.pod_uid, "");
	t = parse_ok("/docker/" ID64);
	assert_string_equal(t.runtime, "docker");
	assert_string_equal(t.container_id, ID64);
	/* Processes a container runs in a sub-cgroup stay the container's. */
	t = parse_ok("/docker/" ID64 "/init.scope");
	assert_string_equal(t.container_id, ID64);
	t = parse_ok("/machine.slice/libpod-" ID64 ".scope");
	assert_string_equal(t.runtime, "podman");
	t = parse_ok("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope/container");
	assert_string_equal(t.runtime, "podman");
	assert_string_equal(t.container_id, ID64);
	t = parse_ok("/machine.slice/libpod-conmon-" ID64 ".scope");
	assert_string_equal(t.container_id, "");
	t = parse_ok("/libpod_parent/libpod-" ID64);
	assert_string_equal(t.runtime, "podman");
	/* Short ids (12 hex) are ids too. */
	t = parse_ok("/docker/3f2b9c0d1e4a");
	assert_string_equal(t.container_id, "3f2b9c0d1e4a");
}

static void test_slurm_systemd(void **state)
{
	struct cw_tenant t;

	(void)state;
	t = parse_ok("/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0");
	assert_string_equal(t.runtime, "slurm");
	assert_string_equal(t.slurm_job, "4242");
	assert_string_equal(t.slurm_step, "0");
	t = parse_ok("/slurm/uid_1000/job_17/step_batch");
	assert_string_equal(t.slurm_job, "17");
	assert_string_equal(t.slurm_step, "batch");
	t = parse_ok("/system.slice/slurmstepd.scope/job_x1/step_0");
	assert_string_equal(t.slurm_job, "");
	t = parse_ok("/system.slice/nginx.service");
	assert_string_equal(t.runtime, "systemd");
	assert_string_equal(t.unit, "nginx.service");
	t = parse_ok("/user.slice/user-1000.slice/session-7.scope");
	assert_string_equal(t.runtime, "systemd");
	assert_string_equal(t.unit, "session-7.scope");
	t = parse_ok("/user.slice");
	assert_string_equal(t.runtime, "");
	assert_string_equal(t.unit, "user.slice");
	t = parse_ok("/");
	assert_string_equal(t.runtime, "");
	t = parse_ok("/some/thing/else");
	assert_false(cw_tenant_named(&t));
}

static void test_malformed(void **state)
{
	struct cw_tenant t;
	char *big;

	(void)state;
	/* Ids of the wrong length or case, or with non-hex characters. */
	t = parse_ok("/system.slice/docker-" ID64 "00.scope");
	assert_string_equal(t.container_id, "");
	t = parse_ok("/system.slice/docker-3F2B9C0D1E4A5B6C.scope");
	assert_string_equal(t.container_id, "");
	t = parse_ok("/system.slice/docker-abc.scope");
	assert_string_equal(t.container_id, "");
	t = parse_ok("/system.slice/docker-zz2b9c0d1e4a5b6c.scope");
	assert_string_equal(t.container_id, "");
	t = parse_ok("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podnotauid.slice");
	assert_string_equal(t.pod_uid, "");
	t = parse_ok("/kubepods/burstable/pod" UID "x/" ID64);
	assert_string_equal(t.pod_uid, "");
	/* A kubepods-looking name outside kubepods is not a pod. */
	t = parse_ok("/system.slice/pod" UID);
	assert_string_equal(t.pod_uid, "");
	/* Hostile: relative, traversal, control bytes, high bytes, length. */
	assert_int_equal(cw_tenant_parse("docker/" ID64, &t), -EINVAL);
	assert_int_equal(cw_tenant_parse("", &t), -EINVAL);
	assert_int_equal(cw_tenant_parse(NULL, &t), -EINVAL);
	assert_int_equal(cw_tenant_parse("/docker/../" ID64, &t), -EINVAL);
	assert_string_equal(t.container_id, "");
	assert_int_equal(cw_tenant_parse("/docker/./" ID64, &t), -EINVAL);
	assert_int_equal(cw_tenant_parse("/docker/" ID64 "\n0::/evil", &t), -EINVAL);
	assert_int_equal(cw_tenant_parse("/docker/\x1b[31m", &t), -EINVAL);
	assert_int_equal(cw_tenant_parse("/docker/\xc3\xa9", &t), -EINVAL);
	big = malloc(CW_CGPATH_MAX + 2);
	assert_non_null(big);
	memset(big, 'a', CW_CGPATH_MAX + 1);
	big[0] = '/';
	big[CW_CGPATH_MAX + 1] = 0;
	assert_int_equal(cw_tenant_parse(big, &t), -EINVAL);
	/* At the cap, components of legal length: accepted. */
	for (size_t i = 0; i < CW_CGPATH_MAX; i += 200)
		big[i] = '/';
	big[CW_CGPATH_MAX] = 0;
	assert_int_equal(cw_tenant_parse(big, &t), 0);
	/* A component over NAME_MAX. */
	memset(big, 'a', 300);
	big[0] = '/';
	big[300] = 0;
	assert_int_equal(cw_tenant_parse(big, &t), -EINVAL);
	free(big);
	/* Doubled slashes are the root's, not an error. */
	t = parse_ok("//docker//" ID64);
	assert_string_equal(t.container_id, ID64);
}

static void test_k8s_names(void **state)
{
	(void)state;
	assert_true(cw_k8s_name_valid("trainer-7f9c-abcde", 18, 0));
	assert_true(cw_k8s_name_valid("a.b-c", 5, 0));
	assert_false(cw_k8s_name_valid("a.b", 3, 1)); /* namespaces have no dots */
	assert_false(cw_k8s_name_valid("-a", 2, 0));
	assert_false(cw_k8s_name_valid("a-", 2, 0));
	assert_false(cw_k8s_name_valid("Upper", 5, 0));
	assert_false(cw_k8s_name_valid("a b", 3, 0));
	assert_false(cw_k8s_name_valid("a\"b", 3, 0));
	assert_false(cw_k8s_name_valid("", 0, 0));
	char long_name[300];
	memset(long_name, 'a', sizeof(long_name));
	assert_true(cw_k8s_name_valid(long_name, 253, 0));
	assert_false(cw_k8s_name_valid(long_name, 254, 0));
	assert_true(cw_k8s_name_valid(long_name, 63, 1));
	assert_false(cw_k8s_name_valid(long_name, 64, 1));
}

static void test_filters(void **state)
{
	struct cw_tenant_filter f;
	struct cw_tenant t;
	char err[256];
	const char *p = "/kubepods/burstable/pod" UID "/" ID64;

	(void)state;
	t = parse_ok(p);
	assert_int_equal(cw_tenant_filter_parse(&f, "--container", "3f2b9c", err, sizeof(err)), 0);
	assert_true(cw_tenant_match(&f, 9, p, &t));
	assert_int_equal(cw_tenant_filter_parse(&f, "--container", "3f2b9d", err, sizeof(err)), 0);
	assert_false(cw_tenant_match(&f, 9, p, &t));
	assert_int_equal(cw_tenant_filter_parse(&f, "--container", "3f2", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--container"));
	assert_int_equal(cw_tenant_filter_parse(&f, "--container", "3F2B9C", err, sizeof(err)), -EINVAL);
	assert_int_equal(cw_tenant_filter_parse(&f, "--pod", UID, err, sizeof(err)), 0);
	assert_true(cw_tenant_match(&f, 9, p, &t));
	snprintf(t.pod, sizeof(t.pod), "trainer-0");
	assert_int_equal(cw_tenant_filter_parse(&f, "--pod", "trainer-0", err, sizeof(err)), 0);
	assert_true(cw_tenant_match(&f, 9, p, &t));
	assert_int_equal(cw_tenant_filter_parse(&f, "--pod", "Trainer", err, sizeof(err)), -EINVAL);
	assert_int_equal(cw_tenant_filter_parse(&f, "--cgroup", "4242", err, sizeof(err)), 0);
	assert_int_equal(f.kind, CW_TF_CGROUP_ID);
	assert_true(cw_tenant_match(&f, 4242, p, &t));
	assert_false(cw_tenant_match(&f, 4243, p, &t));
	assert_int_equal(cw_tenant_filter_parse(&f, "--cgroup", "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(cw_tenant_filter_parse(&f, "--cgroup", "/sys/fs/cgroup/unified/docker/x", err, sizeof(err)), 0);
	assert_string_equal(f.value, "/docker/x");
	assert_int_equal(cw_tenant_filter_parse(&f, "--cgroup", "/sys/fs/cgroup/unified", err, sizeof(err)), 0);
	assert_string_equal(f.value, "/");
	assert_int_equal(cw_tenant_filter_parse(&f, "--cgroup", "/a/../b", err, sizeof(err)), -EINVAL);
	assert_int_equal(cw_tenant_filter_parse(&f, "--slurm-job", "4242", err, sizeof(err)), 0);
	t = parse_ok("/slurm/uid_0/job_4242/step_0");
	assert_true(cw_tenant_match(&f, 1, "/slurm/uid_0/job_4242/step_0", &t));
	t = parse_ok("/slurm/uid_0/job_42420/step_0");
	assert_false(cw_tenant_match(&f, 1, "/slurm/uid_0/job_42420/step_0", &t));
	assert_int_equal(cw_tenant_filter_parse(&f, "--slurm-job", "42a", err, sizeof(err)), -EINVAL);
	assert_int_equal(cw_tenant_filter_parse(&f, "--nope", "x", err, sizeof(err)), -ENOENT);
	assert_true(cw_cgpath_covers("/a", "/a"));
	assert_true(cw_cgpath_covers("/a", "/a/b"));
	assert_true(cw_cgpath_covers("/a/", "/a/b"));
	assert_false(cw_cgpath_covers("/a", "/ab"));
	assert_true(cw_cgpath_covers("/", "/x"));
}

/* The one parser behind flags, query parameters and tool arguments. */
static void test_filter_add(void **state)
{
	struct cw_tenant_filter v[3];
	struct cw_tenant t;
	char err[256];
	int n = 0;

	(void)state;
	t = parse_ok("/kubepods/burstable/pod" UID "/" ID64);
	snprintf(t.ns, sizeof(t.ns), "ml");
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "namespace", "ml", err, sizeof(err)), 0);
	assert_int_equal(v[0].kind, CW_TF_NAMESPACE);
	assert_true(cw_tenant_match(&v[0], 1, "/x", &t));
	snprintf(t.ns, sizeof(t.ns), "batch");
	assert_false(cw_tenant_match(&v[0], 1, "/x", &t));
	assert_string_equal(cw_tenant_filter_flag(&v[0]), "--namespace");
	/* A namespace is a DNS-1123 label: no dots, no upper case. */
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "--namespace", "a.b", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bad --namespace \"a.b\" (want a Kubernetes namespace)");
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "slurm_job", "42", err, sizeof(err)), 0);
	assert_int_equal(v[1].kind, CW_TF_SLURM_JOB);
	assert_string_equal(cw_tenant_filter_flag(&v[1]), "--slurm-job");
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "cgroup", "77", err, sizeof(err)), 0);
	assert_string_equal(cw_tenant_filter_flag(&v[2]), "--cgroup");
	/* Full, and names that are not filters. */
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "pod", "p", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 3"));
	assert_int_equal(n, 3);
	n = 0;
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "since", "5m", err, sizeof(err)), -ENOENT);
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "--pid", "5", err, sizeof(err)), -ENOENT);
	assert_int_equal(cw_tenant_filter_add(v, &n, 3, "container", NULL, err, sizeof(err)), -EINVAL);
	assert_int_equal(n, 0);
}

static void test_keys(void **state)
{
	struct cw_tenant a, b;
	char ka[128], kb[128];

	(void)state;
	a = parse_ok("/kubepods/burstable/pod" UID "/" ID64);
	b = parse_ok("/kubepods/burstable/pod" UID "/0123456789ab");
	cw_tenant_key(&a, "x", ka, sizeof(ka));
	cw_tenant_key(&b, "y", kb, sizeof(kb));
	assert_string_equal(ka, kb); /* two containers of one pod: one tenant */
	assert_string_equal(ka, "pod:" UID);
	b = parse_ok("/system.slice/docker-" ID64 ".scope");
	cw_tenant_key(&b, "y", kb, sizeof(kb));
	assert_string_equal(kb, "container:" ID64);
	b = parse_ok("/user.slice");
	cw_tenant_key(&b, "/user.slice", kb, sizeof(kb));
	assert_string_equal(kb, "cgroup:/user.slice");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_containerd_systemd), cmocka_unit_test(test_cgroupfs_kubelet),
		cmocka_unit_test(test_crio_docker_podman), cmocka_unit_test(test_slurm_systemd),
		cmocka_unit_test(test_malformed),          cmocka_unit_test(test_k8s_names),
		cmocka_unit_test(test_filters),            cmocka_unit_test(test_keys),
		cmocka_unit_test(test_filter_add),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
