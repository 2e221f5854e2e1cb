#include "pipeline/nccl_track.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/ops.h"
#include "util/vec.h"
#include "util/u64map.h"

/* Communicators and p2p channels followed at once; beyond these, calls
 * are stored with sequence numbers from a fresh count (counted). */
#define MAX_COMMS 65536
#define MAX_CHANNELS (1 << 20)

struct comm_state {
	uint32_t pid;
	uint64_t handle;
	int64_t comm_id, rank, nranks;
	int64_t coll_seq;   /* collectives entered so far */
	int64_t splits;     /* ncclCommSplit calls on it so far */
};

/* Calls of one thread waiting for their completion: an asynchronous
 * collective (NCCL's, PyTorch's default) returns once enqueued and is
 * waited for in the thread's next synchronization, whose end is the
 * collective's completion. */
#define MAX_PENDING 16
struct pending {
	uint32_t tid;
	int n;
	struct cw_nccl_call_row rows[MAX_PENDING];
};

struct cw_nccl_track {
	struct cw_writer *w;
	struct u64map pend_index; /* tid + 1 -> pend[] */
	struct pending *pend;
	size_t npend, pend_alloc;
	struct u64map index;    /* hash(pid, handle) -> comms[] */
	struct comm_state *comms;
	size_t n, alloc;
	struct u64map channels; /* hash(pid, handle, op, peer) -> p2p calls so far */
	struct u64map ranked;   /* pid + 1 -> 1: its process row has a rank */
};

int cw_nccl_track_new(struct cw_nccl_track **out, struct cw_writer *w)
{
	struct cw_nccl_track *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->w = w;
	u64map_init(&t->index, MAX_COMMS);
	u64map_init(&t->channels, MAX_CHANNELS);
	u64map_init(&t->ranked, MAX_COMMS);
	u64map_init(&t->pend_index, MAX_CHANNELS);
	*out = t;
	return 0;
}

static int write_pending(struct cw_nccl_track *t, struct pending *p, uint64_t done_wall, uint64_t wait_ns,
			 int known)
{
	int err = 0, e;

	for (int i = 0; i < p->n; i++) {
		struct cw_nccl_call_row *r = &p->rows[i];

		if (known) {
			r->done_wall_ns = (int64_t)done_wall;
			r->wait_ns = (int64_t)wait_ns;
		}
		if ((e = cw_writer_nccl_call(t->w, r)) && !err)
			err = e;
	}
	p->n = 0;
	return err;
}

static struct pending *pending_of(struct cw_nccl_track *t, uint32_t tid, int create)
{
	int64_t idx;

	if (u64map_get(&t->pend_index, (uint64_t)tid + 1, &idx))
		return &t->pend[idx];
	if (!create)
		return NULL;
	if (cw_vec_reserve(&t->pend, &t->pend_alloc, t->npend + 1, sizeof(*t->pend), 16) < 0)
		return NULL;
	if (u64map_put(&t->pend_index, (uint64_t)tid + 1, (int64_t)t->npend))
		return NULL;
	t->pend[t->npend].tid = tid;
	t->pend[t->npend].n = 0;
	return &t->pend[t->npend++];
}

int cw_nccl_track_sync(struct cw_nccl_track *t, uint32_t tid, uint64_t wall_ns, uint64_t dur_ns, int has_ret)
{
	struct pending *p = pending_of(t, tid, 0);

	if (!p || !p->n)
		return 0;
	/* An unfinished synchronization (a hang): the collectives waited for
	 * never completed; their rows say so with a NULL completion. */
	if (!has_ret) {
		for (int i = 0; i < p->n; i++)
			p->rows[i].wait_ns = (int64_t)dur_ns;
		return write_pending(t, p, 0, 0, 0);
	}
	return write_pending(t, p, wall_ns + dur_ns, dur_ns, 1);
}

/* Writes every row still waiting for a synchronization (no completion). */
static int cw_nccl_track_flush(struct cw_nccl_track *t)
{
	int err = 0, e;

	for (size_t i = 0; i < t->npend; i++)
		if ((e = write_pending(t, &t->pend[i], 0, 0, 0)) && !err)
			err = e;
	return err;
}

void cw_nccl_track_free(struct cw_nccl_track *t)
{
	if (!t)
		return;
	cw_nccl_track_flush(t);
	u64map_free(&t->pend_index);
	free(t->pend);
	u64map_free(&t->index);
	u64map_free(&t->channels);
	u64map_free(&t->ranked);
	free(t->comms);
	free(t);
}

/* Bytes of one element of an ncclDataType_t (nccl.h of 2.28), 0 unknown. */
static int cw_nccl_dtype_size(int64_t dtype)
{
	/* ncclInt8/Char, Uint8, Int32, Uint32, Int64, Uint64, Float16,
	 * Float32, Float64, Bfloat16, Float8e4m3, Float8e5m2. */
	static const int sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return dtype >= 0 && dtype < (int64_t)(sizeof(sizes) / sizeof(sizes[0])) ? sizes[dtype] : 0;
}

/* Whether op is a collective (every rank of the communicator calls it),
 * or a point-to-point call. */
static int cw_nccl_is_collective(unsigned op)
{
	switch (op) {
	case CW_OP_ncclAllReduce:
	case CW_OP_ncclAllGather:
	case CW_OP_ncclReduceScatter:
	case CW_OP_ncclBroadcast:
	case CW_OP_ncclBcast:
	case CW_OP_ncclReduce:
	case CW_OP_ncclAlltoAll:
		return 1;
	default:
		return 0;
	}
}

static int cw_nccl_is_p2p(unsigned op)
{
	return op == CW_OP_ncclSend || op == CW_OP_ncclRecv;
}

int64_t cw_nccl_call_bytes(unsigned op, int64_t count, int64_t dtype)
{
	int sz = cw_nccl_dtype_size(dtype);

	if ((!cw_nccl_is_collective(op) && !cw_nccl_is_p2p(op)) || !sz || count < 0 || count > (INT64_MAX / 8))
		return -1;
	return count * sz;
}

uint64_t cw_nccl_split_id(uint64_t parent_id, uint64_t ordinal, int64_t color)
{
	uint64_t h = cw_fnv1a(CW_FNV_INIT, &parent_id, sizeof(parent_id));

	h = cw_fnv1a(h, &ordinal, sizeof(ordinal));
	h = cw_fnv1a(h, &color, sizeof(color));
	return h ? h : 1;
}

static uint64_t comm_key(uint32_t pid, uint64_t handle)
{
	uint64_t k = cw_fnv1a(CW_FNV_INIT, &pid, sizeof(pid));

	k = cw_fnv1a(k, &handle, sizeof(handle));
	return k ? k : 1;
}

static struct comm_state *comm_get(struct cw_nccl_track *t, uint32_t pid, uint64_t handle, int create)
{
	uint64_t k = comm_key(pid, handle);
	int64_t idx;

	if (u64map_get(&t->index, k, &idx))
		return &t->comms[idx];
	if (!create || !handle)
		return NULL;
	if (cw_vec_reserve(&t->comms, &t->alloc, t->n + 1, sizeof(*t->comms), 16) < 0)
		return NULL;
	if (u64map_put(&t->index, k, (int64_t)t->n))
		return NULL;
	memset(&t->comms[t->n], 0, sizeof(t->comms[0]));
	t->comms[t->n].pid = pid;
	t->comms[t->n].handle = handle;
	t->comms[t->n].comm_id = t->comms[t->n].rank = t->comms[t->n].nranks = CW_NCCL_NONE;
	return &t->comms[t->n++];
}

/* A communicator created by an init or a split: its row, and for the
 * process's first multi-rank communicator its rank on the process row
 * (the world communicator comes first in data-parallel jobs). */
static int on_created(struct cw_nccl_track *t, const struct cw_call_entry *e, uint64_t wall_ns)
{
	struct cw_nccl_comm_row r = {
		.pid = e->hdr.pid, .comm = (int64_t)e->args[5], .comm_id = CW_NCCL_NONE, .nranks = CW_NCCL_NONE,
		.rank = CW_NCCL_NONE, .parent_id = CW_NCCL_NONE, .op = cw_op_name(e->hdr.op),
		.created_wall_ns = (int64_t)wall_ns, .destroyed_wall_ns = CW_NCCL_NONE, .async_error = CW_NCCL_NONE,
	};
	struct comm_state *c, *parent;
	int64_t dummy;
	int err;

	switch (e->hdr.op) {
	case CW_OP_ncclCommInitRank:
	case CW_OP_ncclCommInitRankConfig:
	case CW_OP_ncclCommInitRankScalable:
		r.nranks = (int64_t)(int32_t)e->args[0];
		r.rank = (int64_t)(int32_t)e->args[2];
		if (e->args[1] && e->args[1] != (uint64_t)-1)
			r.comm_id = (int64_t)e->args[1];
		break;
	case CW_OP_ncclCommInitAll: {
		/* One process owns every rank: the id is its own. */
		uint64_t h = comm_key(e->hdr.pid, e->args[5]);

		r.nranks = (int64_t)(int32_t)e->args[0];
		r.rank = 0;
		r.comm_id = (int64_t)h;
		break;
	}
	case CW_OP_ncclCommSplit:
		parent = comm_get(t, e->hdr.pid, e->args[3], 0);
		if (parent && parent->comm_id != CW_NCCL_NONE) {
			r.parent_id = parent->comm_id;
			r.comm_id = (int64_t)cw_nccl_split_id((uint64_t)parent->comm_id, (uint64_t)parent->splits - 1,
							     (int64_t)(int32_t)e->args[0]);
		}
		break;
	default:
		return 0;
	}
	if (!r.comm)
		return 0;
	c = comm_get(t, e->hdr.pid, e->args[5], 1);
	if (!c)
		return -ENOMEM;
	c->comm_id = r.comm_id;
	c->rank = r.rank;
	c->nranks = r.nranks;
	c->coll_seq = 0;
	c->splits = 0;
	if ((err = cw_writer_nccl_comm(t->w, &r)))
		return err;
	if (r.rank != CW_NCCL_NONE && r.nranks > 1 && e->hdr.op != CW_OP_ncclCommSplit &&
	    !u64map_get(&t->ranked, (uint64_t)e->hdr.pid + 1, &dummy)) {
		struct cw_process_row pr = {
			.pid = e->hdr.pid, .rank = (int)r.rank, .local_rank = -1, .world_size = (int)r.nranks,
		};

		u64map_put(&t->ranked, (uint64_t)e->hdr.pid + 1, 1);
		return cw_writer_process(t->w, &pr);
	}
	return 0;
}

static int on_comm_update(struct cw_nccl_track *t, const struct cw_call_entry *e, uint64_t wall_ns, uint64_t end_ns,
			  int64_t ret)
{
	struct cw_nccl_comm_row r = {
		.pid = e->hdr.pid, .comm = (int64_t)e->args[3], .comm_id = CW_NCCL_NONE, .nranks = CW_NCCL_NONE,
		.rank = CW_NCCL_NONE, .parent_id = CW_NCCL_NONE, .created_wall_ns = CW_NCCL_NONE,
		.destroyed_wall_ns = CW_NCCL_NONE, .async_error = CW_NCCL_NONE,
	};

	if (!r.comm)
		return 0;
	if (e->hdr.op == CW_OP_ncclCommGetAsyncError) {
		/* ncclInProgress (7) is a nonblocking communicator still
		 * initializing, not an error. */
		if (ret != 0 || (int64_t)e->args[2] == 0 || (int64_t)e->args[2] == 7 || e->args[2] == (uint64_t)-1)
			return 0;
		r.async_error = (int64_t)e->args[2];
	} else {
		/* Destroy and abort end it; the row keeps when. */
		r.destroyed_wall_ns = (int64_t)(wall_ns + (end_ns > e->hdr.ts_ns ? end_ns - e->hdr.ts_ns : 0));
	}
	return cw_writer_nccl_comm(t->w, &r);
}

static int on_traffic(struct cw_nccl_track *t, const struct cw_call_entry *e, uint64_t wall_ns, uint64_t end_ns,
		      int has_ret, int64_t ret)
{
	unsigned op = e->hdr.op;
	struct comm_state *c = comm_get(t, e->hdr.pid, e->args[3], 1);
	struct cw_nccl_call_row r = {
		.pid = e->hdr.pid, .tid = e->hdr.tid, .comm = (int64_t)e->args[3], .comm_id = CW_NCCL_NONE,
		.rank = CW_NCCL_NONE, .nranks = CW_NCCL_NONE, .op = cw_op_name(op),
		.count = (int64_t)e->args[0], .datatype = (int64_t)(int32_t)e->args[1], .redop = CW_NCCL_NONE,
		.peer = CW_NCCL_NONE, .stream = (int64_t)e->args[4], .wall_ns = wall_ns, .mono_ns = e->hdr.ts_ns,
		.duration_ns = end_ns > e->hdr.ts_ns ? end_ns - e->hdr.ts_ns : 0, .ret = has_ret ? ret : CW_NCCL_NONE,
		.done_wall_ns = CW_NCCL_NONE, .wait_ns = CW_NCCL_NONE,
	};
	struct pending *p;
	/* A call that failed at once entered no collective: it is stored
	 * with the number the next one will take. */
	int counts = !has_ret || ret == 0;

	r.bytes = cw_nccl_call_bytes(op, r.count, r.datatype);
	if (r.bytes < 0)
		r.bytes = CW_NCCL_NONE;
	switch (op) {
	case CW_OP_ncclAllReduce:
	case CW_OP_ncclReduceScatter:
		r.redop = (int64_t)(int32_t)e->args[2];
		break;
	case CW_OP_ncclReduce:
		r.redop = (int64_t)(int32_t)e->args[2];
		r.peer = (int64_t)(int32_t)e->args[5]; /* root */
		break;
	case CW_OP_ncclBroadcast:
	case CW_OP_ncclBcast:
	case CW_OP_ncclSend:
	case CW_OP_ncclRecv:
		r.peer = (int64_t)(int32_t)e->args[2]; /* root or peer */
		break;
	default:
		break;
	}
	if (!c)
		return r.comm ? -ENOMEM : 0;
	r.comm_id = c->comm_id;
	r.rank = c->rank;
	r.nranks = c->nranks;
	if (cw_nccl_is_p2p(op)) {
		/* Sends to a peer pair with that peer's receives from this
		 * rank in order: one count per (comm, direction, peer). */
		uint64_t k = comm_key(e->hdr.pid, e->args[3]);
		int64_t n = 0;

		k = cw_fnv1a(k, &op, sizeof(op));
		k = cw_fnv1a(k, &r.peer, sizeof(r.peer));
		k = k ? k : 1;
		u64map_get(&t->channels, k, &n);
		r.seq = n + 1;
		if (counts)
			u64map_put(&t->channels, k, n + 1);
	} else {
		r.seq = c->coll_seq + 1;
		if (counts)
			c->coll_seq++;
	}
	if (!counts)
		return cw_writer_nccl_call(t->w, &r);
	/* Held until the thread synchronizes. A blocking collective (the
	 * call lasted until done) with none before the next one: its own
	 * end is its completion, written when the next call comes. */
	p = pending_of(t, e->hdr.tid, 1);
	if (!p)
		return -ENOMEM;
	if (p->n == MAX_PENDING) {
		const struct cw_nccl_call_row *last = &p->rows[p->n - 1];
		int err = write_pending(t, p, last->wall_ns + last->duration_ns, 0, 1);

		if (err)
			return err;
	}
	p->rows[p->n++] = r;
	return 0;
}

int cw_nccl_track_call(struct cw_nccl_track *t, const struct cw_call_entry *e, uint64_t wall_ns,
		       uint64_t end_ns, int has_ret, int64_t ret)
{
	unsigned op = e->hdr.op;

	if (cw_nccl_is_collective(op) || cw_nccl_is_p2p(op))
		return on_traffic(t, e, wall_ns, end_ns, has_ret, ret);
	if (op == CW_OP_ncclCommSplit) {
		/* Every split call counts on the parent, also a rank's that
		 * gets no communicator (NCCL_SPLIT_NOCOLOR), so the ordinals
		 * agree across ranks. */
		struct comm_state *p = comm_get(t, e->hdr.pid, e->args[3], 0);

		if (p)
			p->splits++;
	}
	switch (op) {
	case CW_OP_ncclCommInitRank:
	case CW_OP_ncclCommInitRankConfig:
	case CW_OP_ncclCommInitRankScalable:
	case CW_OP_ncclCommInitAll:
	case CW_OP_ncclCommSplit:
		return has_ret && ret == 0 ? on_created(t, e, wall_ns) : 0;
	case CW_OP_ncclCommDestroy:
	case CW_OP_ncclCommAbort:
	case CW_OP_ncclCommGetAsyncError:
		return on_comm_update(t, e, wall_ns, end_ns, has_ret ? ret : 0);
	default:
		return 0;
	}
}
