/* Defaults the commands share that come from the config file. */
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
