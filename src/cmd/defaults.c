/* Defaults the commands share that come from the config file. */
#include <stdlib.h>
#include "cmd/cmd.h"

#include <stdlib.h>

#include "config/config.h"
#include "store/file_nodes.h"
#include "store/losses.h"
#include "store/store.h"
#include "util/log.h"

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

const char *cw_reader_node(const char *db_path, char *buf, size_t len)
{
	const struct cw_config *c = NULL;
	char err[8];

	if (cw_config_get(&c, err, sizeof(err)))
		c = NULL;
	/* --node or the config's node: said, so kept. */
	if ((cw_global_node && *cw_global_node) || (c && c->node))
		return cw_node_name(c);
	return cw_store_nodes_label(db_path, cw_node_name(c), buf, len);
}

void cw_warn_losses(const char *db_path, sqlite3 *db)
{
	struct cw_session_loss *l = NULL;
	struct cw_store *st = NULL;
	char err[512], line[768];
	int n;

	if (!db) {
		if (cw_store_open(&st, db_path, CW_STORE_READONLY, err, sizeof(err)))
			return;
		db = st->db;
	}
	n = cw_store_losses(db, cw_global_node, 0, 0, &l);
	for (int i = 0; i < n; i++) {
		cw_session_loss_text(&l[i], line, sizeof(line));
		cw_warn("%s", line);
	}
	free(l);
	cw_store_close(st);
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

const char *cw_default_kubelet_url(void)
{
	const struct cw_config *c;
	char err[8];

	if (cw_config_get(&c, err, sizeof(err)))
		return NULL;
	return c->tenants_kubelet_url;
}
