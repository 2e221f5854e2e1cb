/* http_probes.c: load, attach and feed the server socket-call probes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader/http_probes.h"
#include "loader/libbpf_log.h"

#include "http.skel.h"

#define CW_HTTP_RING_KB_DEFAULT 4096u

struct http_fd_key {
	uint32_t tgid;
	int32_t fd;
};

struct cw_http_probes {
	struct http_bpf *skel;
	struct bpf_link *exit, *fork;
};

/* The syscall numbers of the architecture causeway was built for, which
 * is the kernel's: a release binary is per architecture. (A 32-bit task
 * on a 64-bit kernel uses other numbers; its calls are not matched.) */
static void set_syscall_numbers(struct http_bpf *s)
{
#ifdef SYS_read
	s->rodata->cfg_nr_read = SYS_read;
#endif
#ifdef SYS_write
	s->rodata->cfg_nr_write = SYS_write;
#endif
#ifdef SYS_readv
	s->rodata->cfg_nr_readv = SYS_readv;
#endif
#ifdef SYS_writev
	s->rodata->cfg_nr_writev = SYS_writev;
#endif
#ifdef SYS_recvfrom
	s->rodata->cfg_nr_recvfrom = SYS_recvfrom;
#endif
#ifdef SYS_sendto
	s->rodata->cfg_nr_sendto = SYS_sendto;
#endif
#ifdef SYS_recvmsg
	s->rodata->cfg_nr_recvmsg = SYS_recvmsg;
#endif
#ifdef SYS_sendmsg
	s->rodata->cfg_nr_sendmsg = SYS_sendmsg;
#endif
#ifdef SYS_accept
	s->rodata->cfg_nr_accept = SYS_accept;
#endif
#ifdef SYS_accept4
	s->rodata->cfg_nr_accept4 = SYS_accept4;
#endif
#ifdef SYS_close
	s->rodata->cfg_nr_close = SYS_close;
#endif
#ifdef SYS_dup
	s->rodata->cfg_nr_dup = SYS_dup;
#endif
#ifdef SYS_dup2
	s->rodata->cfg_nr_dup2 = SYS_dup2;
#endif
#ifdef SYS_dup3
	s->rodata->cfg_nr_dup3 = SYS_dup3;
#endif
}

/* Ring sizes are a power-of-two multiple of the page size. */
static uint32_t ring_bytes(unsigned kb)
{
	uint64_t want = (uint64_t)kb * 1024, sz = (uint64_t)sysconf(_SC_PAGESIZE);

	while (sz < want && sz < (1ull << 30))
		sz <<= 1;
	return (uint32_t)sz;
}

int cw_http_probes_open(struct cw_http_probes **out, const struct cw_http_probes_opts *o, char *err,
			size_t errlen)
{
	struct cw_http_probes *hp;
	int rc;

	*out = NULL;
	if (o->tracked_fd < 0 || o->drops_fd < 0 || o->stats_fd < 0) {
		snprintf(err, errlen, "the server probes need the kernel probes loaded first");
		return -EINVAL;
	}
	hp = calloc(1, sizeof(*hp));
	if (!hp) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	cw_libbpf_log_reset();
	hp->skel = http_bpf__open();
	if (!hp->skel) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the server probes: %s", strerror(-rc));
		goto fail;
	}
	set_syscall_numbers(hp->skel);
	bpf_map__set_max_entries(hp->skel->maps.rb_http, ring_bytes(o->ring_kb ? o->ring_kb : CW_HTTP_RING_KB_DEFAULT));
	if ((rc = bpf_map__reuse_fd(hp->skel->maps.cw_tracked, o->tracked_fd)) ||
	    (rc = bpf_map__reuse_fd(hp->skel->maps.cw_drops, o->drops_fd)) ||
	    (rc = bpf_map__reuse_fd(hp->skel->maps.cw_stats, o->stats_fd))) {
		snprintf(err, errlen, "cannot share the tracked set with the server probes: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = http_bpf__load(hp->skel))) {
		char why[256];

		cw_libbpf_log_reason(why, sizeof(why));
		snprintf(err, errlen, "cannot load the server probes: %s%s%s", strerror(-rc), why[0] ? ": " : "", why);
		goto fail;
	}
	hp->exit = bpf_program__attach(hp->skel->progs.http_sys_exit);
	if (!hp->exit) {
		rc = -errno;
		snprintf(err, errlen, "cannot attach to sys_exit: %s", strerror(-rc));
		goto fail;
	}
	hp->fork = bpf_program__attach(hp->skel->progs.http_fork);
	if (!hp->fork) {
		rc = -errno;
		snprintf(err, errlen, "cannot attach to sched_process_fork: %s", strerror(-rc));
		goto fail;
	}
	*out = hp;
	return 0;
fail:
	cw_http_probes_close(hp);
	return rc;
}

struct bpf_object *cw_http_probes_object(struct cw_http_probes *hp)
{
	return hp->skel->obj;
}

void cw_http_probes_close(struct cw_http_probes *hp)
{
	if (!hp)
		return;
	bpf_link__destroy(hp->exit);
	bpf_link__destroy(hp->fork);
	http_bpf__destroy(hp->skel);
	free(hp);
}

int cw_http_probes_add_ring(struct cw_http_probes *hp, struct ring_buffer **rb, ring_buffer_sample_fn fn,
			    void *ctx)
{
	int fd = bpf_map__fd(hp->skel->maps.rb_http);

	if (!*rb) {
		*rb = ring_buffer__new(fd, fn, ctx, NULL);
		return *rb ? 1 : -errno;
	}
	return ring_buffer__add(*rb, fd, fn, ctx) ? -EINVAL : 1;
}

static int put_fd(int map_fd, uint32_t tgid, int fd, const void *val)
{
	struct http_fd_key k = { .tgid = tgid, .fd = fd };

	if (bpf_map_update_elem(map_fd, &k, val, BPF_NOEXIST) == 0)
		return 0;
	return errno == EEXIST ? 1 : -errno;
}

int cw_http_probes_listen(struct cw_http_probes *hp, uint32_t tgid, int fd, uint16_t port)
{
	uint32_t v = port;

	return put_fd(bpf_map__fd(hp->skel->maps.http_listen), tgid, fd, &v);
}

int cw_http_probes_conn(struct cw_http_probes *hp, uint32_t tgid, int fd, uint16_t port)
{
	/* struct http_conn in http.bpf.c: the port, the descriptor naming it */
	struct {
		uint32_t port;
		int32_t conn_fd;
	} v = { port, fd };

	return put_fd(bpf_map__fd(hp->skel->maps.http_conns), tgid, fd, &v);
}

/* Deletes tgid's keys from a map keyed by struct http_fd_key: gathered
 * first, as a deleted key's successor is not known any more. */
static void forget_in(int map_fd, uint32_t tgid)
{
	struct http_fd_key cur, next, *found = NULL;
	size_t n = 0, cap = 0;
	int have = 0;

	while (bpf_map_get_next_key(map_fd, have ? &cur : NULL, &next) == 0) {
		cur = next;
		have = 1;
		if (cur.tgid != tgid)
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct http_fd_key *m = realloc(found, ncap * sizeof(*m));

			if (!m)
				break;
			found = m;
			cap = ncap;
		}
		found[n++] = cur;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(map_fd, &found[i]);
	free(found);
}

void cw_http_probes_forget(struct cw_http_probes *hp, uint32_t tgid)
{
	forget_in(bpf_map__fd(hp->skel->maps.http_listen), tgid);
	forget_in(bpf_map__fd(hp->skel->maps.http_conns), tgid);
}
