/* Defaults the commands share that come from the config file. */
#include <stdlib.h>
#include "cmd/cmd.h"

#include "config/config.h"
#include "store/store.h"

const char *cw_default_db(void)
{
	const struct cw_config *c;
	char err[8];

	if (!cw_config_get(&c, err, sizeof(err)) && c->store_path)
		return c->store_path;
	return CW_DEFAULT_DB;
}

uint64_t cw_default_size_cap(void)
{
	const struct cw_config *c;
	char err[8];

	if (!cw_config_get(&c, err, sizeof(err)))
		return c->store_max_bytes;
	return 0;
}

const char *cw_default_node(void)
{
	const struct cw_config *c = NULL;
	char err[8];

	if (cw_config_get(&c, err, sizeof(err)))
		c = NULL;
	return cw_node_name(c);
}

const char *cw_default_nvml_lib(void)
{
	const struct cw_config *c;
	char err[8];

	if (getenv("CW_NVML_LIB") || cw_config_get(&c, err, sizeof(err)))
		return NULL;
	return c->gpu_nvml_lib;
}

uint64_t cw_default_gpu_interval(void)
{
	const struct cw_config *c;
	char err[8];

	return cw_config_get(&c, err, sizeof(err)) ? 0 : c->gpu_interval_ns;
}

uint64_t cw_default_stall_after(void)
{
	const struct cw_config *c;
	char err[8];

	return cw_config_get(&c, err, sizeof(err)) ? 0 : c->gpu_stall_after_ns;
}
