/* Finding the servers trace --inference follows: the processes that own
 * a listening TCP socket on one of the given ports, or (auto) the
 * listening sockets of processes that are a known engine
 * (inference/engines.h). Read from /proc: each process's network
 * namespace's tcp and tcp6 tables (parsed once per namespace per scan)
 * and its descriptors. Everything read there belongs to other processes
 * and is bounded. */
#ifndef CW_INFERENCE_LISTENERS_H
#define CW_INFERENCE_LISTENERS_H

#include <stddef.h>
#include <stdint.h>

#include "inference/engines.h"

#define CW_INFERENCE_MAX_PORTS 16

struct cw_listener {
	uint32_t pid;
	int fd;
	uint16_t port;
	const struct cw_engine *engine; /* NULL: not a known engine */
	char comm[16];
};

/* A connection already accepted on a listener's port when it was found. */
struct cw_listener_conn {
	uint32_t pid;
	int fd;
	uint16_t port;
};

struct cw_listen_query {
	const uint16_t *ports; /* the ports; none: auto */
	size_t nports;
	const char *proc_root; /* NULL: "/proc" */
	/* Only these processes (and not the others), when set; for a
	 * launched command and --pid. */
	const uint32_t *pids;
	size_t npids;
};

/* Fills up to max listeners (and up to maxc open connections of them,
 * *nconns) and returns how many listeners were found, or -errno when
 * /proc cannot be read. */
int cw_listeners_scan(const struct cw_listen_query *q, struct cw_listener *out, size_t max,
		      struct cw_listener_conn *conns, size_t maxc, size_t *nconns);

/* Parses "auto" or a port list "8000" / "8000,8080" into ports; returns
 * the count (0 for auto) or -EINVAL. */
int cw_inference_parse_ports(const char *s, uint16_t *ports, size_t max);

#endif
