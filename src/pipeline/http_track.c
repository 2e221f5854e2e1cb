/* http_track.c: socket-call records to requests rows (http_track.h). */
#include "pipeline/http_track.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "inference/http_conn.h"
#include "util/u64map.h"

/* Connections' ports, and processes' last cgroup and name, are looked up
 * per request; both maps are cleared when full (a port read as 0, a
 * name as unknown, for requests in flight then). */
#define MAX_PIDS 4096
/* A process's exit is read from the lifecycle ring, its last socket
 * calls from the server ring, in either order: its connections end
 * this long after the exit was read, when the calls it made before
 * exiting have been read too. */
#define EXIT_GRACE_NS 1000000000ull
#define MAX_EXITS 1024
/* Loopback ports causeway's own clients (the engine scraper) used
 * lately: their requests are not the server's traffic. */
#define MAX_OWN_PORTS 64

struct pid_info {
	uint64_t cgroup_id;
	char comm[CW_COMM_LEN + 1];
};

struct cw_http_track {
	struct cw_writer *w;
	struct cw_http_conns *conns;
	int64_t mono_to_wall_ns;
	struct u64map port_of;  /* (pid << 32 | fd) + 1 -> port | client port << 16 */
	struct u64map pid_slot; /* pid + 1 -> pids[] index */
	struct pid_info pids[MAX_PIDS];
	size_t npids;
	uint64_t malformed, write_errors, stored, own;
	uint16_t own_ports[MAX_OWN_PORTS];
	size_t nown, own_next;
	struct {
		uint32_t pid;
		uint64_t ts_ns; /* of the exit */
	} exits[MAX_EXITS];
	size_t nexits;
};

static uint64_t conn_key(uint32_t pid, int32_t fd)
{
	return ((uint64_t)pid << 32 | (uint32_t)fd) + 1;
}

static const char *const end_names[] = {
	[CW_HTTP_END_COMPLETE] = "complete", [CW_HTTP_END_NEXT] = "next", [CW_HTTP_END_CLOSED] = "closed",
	[CW_HTTP_END_IDLE] = "idle",         [CW_HTTP_END_FLUSH] = "flush",
};

static int own_client(const struct cw_http_track *t, uint16_t port)
{
	for (size_t i = 0; port && i < t->nown; i++)
		if (t->own_ports[i] == port)
			return 1;
	return 0;
}

static void emit(void *ctx, const struct cw_http_request *q)
{
	struct cw_http_track *t = ctx;
	struct cw_request_row row;
	const struct pid_info *pi = NULL;
	int64_t v = 0;

	if (u64map_get(&t->port_of, conn_key(q->pid, q->fd), &v) && own_client(t, (uint16_t)(v >> 16))) {
		t->own++;
		return;
	}

	memset(&row, 0, sizeof(row));
	row.pid = q->pid;
	row.tid = q->tid;
	row.resp_tid = q->resp_tid;
	if (u64map_get(&t->pid_slot, (uint64_t)q->pid + 1, &v) && v >= 0 && (size_t)v < t->npids)
		pi = &t->pids[v];
	row.cgroup_id = pi ? pi->cgroup_id : 0;
	row.comm = pi && pi->comm[0] ? pi->comm : NULL;
	row.conn_id = q->conn_seq;
	row.port = u64map_get(&t->port_of, conn_key(q->pid, q->fd), &v) ? (uint32_t)(v & 0xffff) : 0;
	row.start_mono_ns = q->start_ns;
	row.wall_ns = (uint64_t)((int64_t)q->start_ns + t->mono_to_wall_ns);
	row.duration_ns = q->end_ns > q->start_ns ? q->end_ns - q->start_ns : 0;
	row.ttft_ns = q->first_body_ns && q->first_body_ns >= q->start_ns ? (int64_t)(q->first_body_ns - q->start_ns)
									  : -1;
	row.method = q->method[0] ? q->method : NULL;
	row.path = q->path[0] ? q->path : NULL;
	row.status = q->status;
	row.bytes_in = q->bytes_in;
	row.bytes_out = q->bytes_out;
	row.streamed = q->streamed;
	row.body_events = q->body_events;
	row.itl_max_ns = q->body_events >= 2 ? (int64_t)q->itl_max_ns : -1;
	row.itl_mean_ns = q->body_events >= 2 ? (int64_t)(q->itl_sum_ns / (q->body_events - 1)) : -1;
	row.end = (unsigned)q->end < sizeof(end_names) / sizeof(end_names[0]) ? end_names[q->end] : "closed";
	if (cw_writer_request(t->w, &row))
		t->write_errors++;
	else
		t->stored++;
}

int cw_http_track_new(struct cw_http_track **out, struct cw_writer *w)
{
	struct cw_http_track *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->w = w;
	t->conns = cw_http_conns_new(CW_HTTP_MAX_CONNS, emit, t);
	if (!t->conns || u64map_init(&t->port_of, 4 * CW_HTTP_MAX_CONNS) || u64map_init(&t->pid_slot, MAX_PIDS)) {
		cw_http_track_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void cw_http_track_free(struct cw_http_track *t)
{
	if (!t)
		return;
	cw_http_conns_free(t->conns);
	u64map_free(&t->port_of);
	u64map_free(&t->pid_slot);
	free(t);
}

void cw_http_track_set_clock(struct cw_http_track *t, int64_t mono_to_wall_ns)
{
	t->mono_to_wall_ns = mono_to_wall_ns;
}

static void note_pid(struct cw_http_track *t, const struct cw_hdr *h)
{
	int64_t v;
	struct pid_info *pi;

	if (!u64map_get(&t->pid_slot, (uint64_t)h->pid + 1, &v)) {
		if (t->npids == MAX_PIDS) {
			u64map_clear(&t->pid_slot);
			t->npids = 0;
		}
		v = (int64_t)t->npids++;
		if (u64map_put(&t->pid_slot, (uint64_t)h->pid + 1, v))
			return;
	}
	pi = &t->pids[v];
	pi->cgroup_id = h->cgroup_id;
	memcpy(pi->comm, h->comm, CW_COMM_LEN);
	pi->comm[CW_COMM_LEN] = 0;
}

/* The connection's server port, and its client's when the accept said
 * it (kept from the accept over the calls that follow). */
static void note_port(struct cw_http_track *t, const struct cw_http_io *r)
{
	uint64_t k = conn_key(r->hdr.pid, r->fd);
	int64_t v = r->port, old;

	if (r->hdr.op == CW_OP_http_accept)
		v |= (int64_t)r->peer_port << 16;
	else if (u64map_get(&t->port_of, k, &old) && (old & 0xffff) == r->port)
		return;
	if (u64map_put(&t->port_of, k, v) == -ENOSPC) {
		u64map_clear(&t->port_of);
		(void)u64map_put(&t->port_of, k, v);
	}
}

void cw_http_track_totals(const struct cw_http_track *t, struct cw_http_track_totals *out)
{
	struct cw_http_stats st;

	cw_http_conns_stats(t->conns, &st);
	out->stored = t->stored;
	out->own = t->own;
	out->not_http = st.not_http;
	out->tls = st.tls;
	out->dropped = st.conns_dropped + t->write_errors + t->malformed;
}

void cw_http_track_own_client(struct cw_http_track *t, uint16_t port)
{
	if (!port || own_client(t, port))
		return;
	t->own_ports[t->own_next] = port;
	t->own_next = (t->own_next + 1) % MAX_OWN_PORTS;
	if (t->nown < MAX_OWN_PORTS)
		t->nown++;
}

int cw_http_track_record(struct cw_http_track *t, const struct cw_http_io *r)
{
	struct cw_http_segment s;

	if (r->head_len > CW_HTTP_IO_HEAD || r->tail_len > CW_HTTP_IO_TAIL || r->len < 0 ||
	    (uint64_t)r->head_len > (uint64_t)r->len) {
		t->malformed++;
		return -EINVAL;
	}
	note_pid(t, &r->hdr);
	switch (r->hdr.op) {
	case CW_OP_http_accept:
		note_port(t, r);
		cw_http_conns_open(t->conns, r->hdr.pid, r->fd, r->hdr.ts_ns);
		return 0;
	case CW_OP_http_close:
		cw_http_conns_close(t->conns, r->hdr.pid, r->fd, r->hdr.ts_ns);
		return 0;
	case CW_OP_http_read:
	case CW_OP_http_write:
		if (!r->len) {
			t->malformed++;
			return -EINVAL;
		}
		note_port(t, r);
		memset(&s, 0, sizeof(s));
		s.ts_ns = r->hdr.ts_ns;
		s.tid = r->hdr.tid;
		s.dir = r->hdr.op == CW_OP_http_read ? CW_HTTP_IN : CW_HTTP_OUT;
		s.len = (uint64_t)r->len;
		s.head = r->head;
		s.head_len = r->head_len;
		/* The tail is the call's last bytes; the part of it head holds
		 * already (a call moving a little more than head) is left out. */
		if (r->tail_len && (uint64_t)r->len > r->head_len) {
			uint64_t beyond = (uint64_t)r->len - r->head_len;
			size_t skip = beyond < r->tail_len ? r->tail_len - (size_t)beyond : 0;

			s.tail = r->tail + skip;
			s.tail_len = r->tail_len - skip;
		}
		cw_http_conns_feed(t->conns, r->hdr.pid, r->fd, &s);
		return 0;
	default:
		t->malformed++;
		return -EINVAL;
	}
}

void cw_http_track_exit(struct cw_http_track *t, uint32_t pid, uint64_t ts_ns)
{
	if (t->nexits == MAX_EXITS) {
		cw_http_conns_close_pid(t->conns, pid, ts_ns);
		return;
	}
	t->exits[t->nexits].pid = pid;
	t->exits[t->nexits].ts_ns = ts_ns;
	t->nexits++;
}

/* The exits read at least EXIT_GRACE_NS before now (all of them when
 * now is 0) end their processes' connections. */
static void close_exited(struct cw_http_track *t, uint64_t now_ns)
{
	size_t keep = 0;

	for (size_t i = 0; i < t->nexits; i++) {
		if (now_ns && now_ns < t->exits[i].ts_ns + EXIT_GRACE_NS) {
			t->exits[keep++] = t->exits[i];
			continue;
		}
		cw_http_conns_close_pid(t->conns, t->exits[i].pid, t->exits[i].ts_ns);
	}
	t->nexits = keep;
}

static void store_counters(struct cw_http_track *t)
{
	struct cw_http_stats st;

	cw_http_conns_stats(t->conns, &st);
	cw_writer_counter_set(t->w, "http.segments", st.segments);
	cw_writer_counter_set(t->w, "http.requests", st.requests);
	cw_writer_counter_set(t->w, "http.requests_stored", t->stored);
	cw_writer_counter_set(t->w, "http.own_requests", t->own);
	cw_writer_counter_set(t->w, "http.write_errors", t->write_errors);
	cw_writer_counter_set(t->w, "http.malformed_records", t->malformed);
	cw_writer_counter_set(t->w, "http.not_http_conns", st.not_http);
	cw_writer_counter_set(t->w, "http.tls_conns", st.tls);
	cw_writer_counter_set(t->w, "http.conns_dropped", st.conns_dropped);
	cw_writer_counter_set(t->w, "http.out_of_order", st.out_of_order);
}

void cw_http_track_tick(struct cw_http_track *t, uint64_t now_ns)
{
	close_exited(t, now_ns);
	cw_http_conns_tick(t->conns, now_ns, CW_HTTP_IDLE_NS);
	store_counters(t);
}

void cw_http_track_finish(struct cw_http_track *t, uint64_t now_ns)
{
	close_exited(t, 0);
	cw_http_conns_flush(t->conns, now_ns);
	store_counters(t);
}
