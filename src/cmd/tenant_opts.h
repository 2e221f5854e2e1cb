/* The tenant filters as every reading command takes them (docs/tenants.md):
 * --cgroup PATH|ID, --container ID, --pod NAME|UID, --slurm-job ID,
 * --namespace NS. One getopt table fragment and one handler, so explain,
 * query, export and the fleet fan-out parse them alike. */
#ifndef CW_CMD_TENANT_OPTS_H
#define CW_CMD_TENANT_OPTS_H

#include <getopt.h>

#include "analysis/scope.h"

#define CW_TENANT_LONGOPTS(val)                                                                      \
	{ "cgroup", required_argument, NULL, (val) }, { "container", required_argument, NULL, (val) }, \
		{ "pod", required_argument, NULL, (val) }, { "slurm-job", required_argument, NULL, (val) }, \
		{ "namespace", required_argument, NULL, (val) }

#define CW_TENANT_USAGE                                                                    \
	"  --cgroup PATH|ID  only the processes of this cgroup and its descendants\n"        \
	"  --container ID    ... of the container whose id starts with ID\n"                  \
	"  --pod NAME|UID    ... of a Kubernetes pod; --namespace NS: of its pods\n"          \
	"  --slurm-job ID    ... of a Slurm job (tenant filters repeat; docs/tenants.md)\n"

/* The option longopts[li] with value arg, into the scope's tenant filters
 * (analysis/scope.h). Returns 0, or CW_EXIT_USAGE after reporting
 * "<cmd>: bad --pod ..." (as JSON with json). */
int cw_scope_opt(struct cw_scope *s, const struct option *longopts, int li, const char *arg, int json,
		 const char *cmd);

#endif
