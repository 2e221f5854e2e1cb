/* Tenant filter flags of the reading commands (tenant_opts.h). */
#include <stdio.h>

#include "cmd/cmd.h"
#include "cmd/tenant_opts.h"
#include "util/log.h"

int cw_scope_opt(struct cw_scope *s, const struct option *longopts, int li, const char *arg, int json,
		 const char *cmd)
{
	char err[256];

	if (!cw_scope_tenant(s, longopts[li].name, arg, err, sizeof(err)))
		return 0;
	cw_report_error(json, "%s: %s", cmd, err);
	return CW_EXIT_USAGE;
}
