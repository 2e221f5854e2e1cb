/* The token a fan-out sends to the agents: one rule for the CLI (explain,
 * query, export --nodes), the MCP fleet tool and the dashboard's /fleet. */
#define _GNU_SOURCE
#include "fleet/fanout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "server/server.h"

int cw_fleet_token(const char *flag_file, char **out, char *err, size_t errlen)
{
	const struct cw_config *cfg;
	const char *env = getenv("CW_TOKEN");
	const char *file = flag_file;

	*out = NULL;
	if (cw_config_get(&cfg, err, errlen))
		return -EINVAL;
	/* The token never comes from argv: --token-file, then $CW_TOKEN, then
	 * fleet.token_file, then the file a local server generates (a fleet
	 * deployed with one shared token file needs nothing more). */
	if (!file && env && *env) {
		if (!(*out = strdup(env))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		return 0;
	}
	if (!file)
		file = cfg->fleet_token_file;
	if (file) {
		*out = cw_token_read_file(file, err, errlen);
		return *out ? 0 : -EINVAL;
	}
	*out = cw_token_read_default(err, errlen);
	return *out || !*err ? 0 : -EPERM;
}
