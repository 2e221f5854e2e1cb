/* http_probes: the socket-call probes of a traced server (bpf/http.bpf.c)
 * for trace --inference. Loaded only when asked for; they share the
 * tracked-process set and the drop and stats counters with the kernel
 * probe families, and write their own ring.
 *
 * A server is followed once its process is in the tracked set and its
 * listening sockets are registered here (cw_http_probes_listen); the
 * connections it accepts from then on are followed in the kernel, and
 * those already open are registered with cw_http_probes_conn. */
#ifndef CW_LOADER_HTTP_PROBES_H
#define CW_LOADER_HTTP_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include <bpf/libbpf.h>

struct cw_http_probes;

struct cw_http_probes_opts {
	unsigned ring_kb;                   /* 0: 4 MiB */
	int tracked_fd, drops_fd, stats_fd; /* the kernel probes' shared maps (required) */
};

/* Loads and attaches; on failure fills err with one lower-case line. */
int cw_http_probes_open(struct cw_http_probes **out, const struct cw_http_probes_opts *o, char *err,
			size_t errlen);
void cw_http_probes_close(struct cw_http_probes *hp);
/* Adds the ring to *rb (created when NULL); fn gets struct cw_http_io records. */
int cw_http_probes_add_ring(struct cw_http_probes *hp, struct ring_buffer **rb, ring_buffer_sample_fn fn,
			    void *ctx);
/* A listening socket (tgid, fd) on port; 0, 1 when it was known, -errno. */
int cw_http_probes_listen(struct cw_http_probes *hp, uint32_t tgid, int fd, uint16_t port);
/* A connection (tgid, fd) already accepted on port; 0, 1 known, -errno. */
int cw_http_probes_conn(struct cw_http_probes *hp, uint32_t tgid, int fd, uint16_t port);
/* The loaded object (for `causeway check`). */
struct bpf_object *cw_http_probes_object(struct cw_http_probes *hp);
/* Forgets every listener of tgid (the process exited). */
void cw_http_probes_forget(struct cw_http_probes *hp, uint32_t tgid);

#endif
