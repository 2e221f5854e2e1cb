/* The node names a store's rows carry, for readers that label what they
 * serve (serve's and MCP's "node", the dashboard header). */
#ifndef CW_STORE_FILE_NODES_H
#define CW_STORE_FILE_NODES_H

#include <stddef.h>

/* The name a reader of path shows: fallback (the host's name, from
 * cw_node_name()) when the file holds no rows yet or its rows carry
 * fallback; the file's one node when it holds another single node; "3
 * nodes: a, b, c" (cut with ", ...") for a merged file. buf holds the
 * answer when it is not fallback. Never fails: an unreadable file gives
 * fallback. */
const char *cw_store_nodes_label(const char *path, const char *fallback, char *buf, size_t len);

#endif
