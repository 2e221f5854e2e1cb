/* The tenant filters as every reading command takes them (docs/tenants.md):
 * --cgroup PATH|ID, --container ID, --pod NAME|UID, --slurm-job ID,
 * --namespace NS. One getopt table fragment and one handler, so explain,
 * query, export and the fleet fan-out parse them alike. */
#ifndef CW_CMD_TENANT_OPTS_H
#define CW_CMD_TENANT_OPTS_H

#include <getopt.h>

#include "tenant/tenant.h"

#define CW_TENANT_LONGOPTS(val)                                                                      \
	{ "cgroup", required_argument, NULL, (val) }, { "container", required_argument, NULL, (val) }, \
		{ "pod", required_argument, NULL, (val) }, { "slurm-job", required_argument, NULL, (val) }, \
		{ "namespace", required_argument, NULL, (val) }

#define CW_TENANT_USAGE                                                                    \
	"  --cgroup PATH|ID  only the processes of this cgroup and its descendants\n"        \
	"  --container ID    ... of the container whose id starts with ID\n"                  \
	"  --pod NAME|UID    ... of a Kubernetes pod; --namespace NS: of its pods\n"          \
	"  --slurm-job ID    ... of a Slurm job (tenant filters repeat; docs/tenants.md)\n"

struct cw_tenant_opts {
	struct cw_tenant_filter f[CW_TENANT_FILTERS_MAX];
	int n;
};

/* The option longopts[li] with value arg. Returns 0, or CW_EXIT_USAGE
 * after reporting "<cmd>: bad --pod ..." (as JSON with json). */
int cw_tenant_opt(struct cw_tenant_opts *t, const struct option *longopts, int li, const char *arg, int json,
		  const char *cmd);

#endif
