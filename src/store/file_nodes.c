/* cw_store_nodes_label (file_nodes.h). */
#include "store/file_nodes.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "store/store.h"

const char *cw_store_nodes_label(const char *path, const char *fallback, char *buf, size_t len)
{
	/* Sessions and the per-second aggregates name every node cheaply
	 * (events are covered by their aggregates); a merge's own session
	 * is on one of its nodes. */
	static const char sql[] = "SELECT node FROM sessions UNION SELECT node FROM aggregates ORDER BY 1 LIMIT 1001";
	struct cw_store *st = NULL;
	sqlite3_stmt *q = NULL;
	char err[256], first[128] = "";
	size_t at = 0;
	int n = 0, own = 0;

	if (!path || !buf || len < 32 || cw_store_open(&st, path, CW_STORE_READONLY, err, sizeof(err)))
		return fallback;
	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK) {
		cw_store_close(st);
		return fallback;
	}
	buf[0] = '\0';
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(q, 0);

		/* Names come from the file (hostile like all trace content):
		 * only what a node may be named is shown (config.c). */
		if (!node || !cw_node_name_valid(node))
			continue;
		own |= fallback && !strcmp(node, fallback);
		if (!n++)
			snprintf(first, sizeof(first), "%s", node);
		/* The list part, whole names only. */
		if (at + strlen(node) + 8 < len - 24)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", node);
		else if (at && !strstr(buf, ", ..."))
			at += (size_t)snprintf(buf + at, len - at, ", ...");
	}
	sqlite3_finalize(q);
	cw_store_close(st);
	if (!n || own)
		return fallback;
	if (n == 1) {
		snprintf(buf, len, "%s", first);
		return buf;
	}
	{
		char list[1024];

		snprintf(list, sizeof(list), "%s", buf);
		snprintf(buf, len, "%s%d nodes: %s", n > 1000 ? "over " : "", n > 1000 ? 1000 : n, list);
	}
	return buf;
}
