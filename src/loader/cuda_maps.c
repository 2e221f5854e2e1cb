/* cuda_maps: what trace reads from the call probes' maps while it runs:
 * the counters, calls still open (the sweep of calls open too long, and
 * those open at the stop), the per-op aggregates taken when the ring
 * filled, and the per-second folds of --capture summary. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf/events.h"
#include "loader/uprobe_int.h"

int cw_cuda_probes_add_ring(struct cw_cuda_probes *cp, struct ring_buffer **rb, ring_buffer_sample_fn fn,
			    void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.rb_cuda);

	if (!*rb) {
		*rb = ring_buffer__new(fd, fn, ctx, NULL);
		return *rb ? 0 : (errno ? -errno : -ENOMEM);
	}
	return ring_buffer__add(*rb, fd, fn, ctx);
}

int cw_cuda_probes_stats(struct cw_cuda_probes *cp, uint64_t out[CW_CS_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(cp->skel->maps.cuda_stats), c;
	uint64_t *vals;
	uint32_t k;

	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (k = 0; k < CW_CS_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

/* Bounds one sweep of call_state. */
#define INFLIGHT_SWEEP_MAX 16384

static void hand_over(struct cw_call_state *st, void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	st->e.hdr.type = CW_REC_CALL_ENTRY;
	st->e.hdr.size = sizeof(st->e);
	fn(ctx, &st->e);
}

/* Open calls in call_slots. A slot is taken with the probes' own protocol
 * (cuda.bpf.h): the owner word is swapped to 0 only if it still names the
 * call that was copied, and the return that loses that race discards its
 * record. One window stays: the call returns and its thread enters the
 * same op again between the copy and the swap (a call older than the
 * cutoff, within a few instructions); the old call is then stored twice
 * and the new one's return is counted as orphaned. */
static int take_slots(struct cw_call_slot *slots, uint64_t cutoff_mono_ns,
		      void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	struct cw_call_state st;
	uint64_t owner;
	int n = 0;
	size_t i;

	for (i = 0; i < CW_CALL_SLOTS; i++) {
		owner = __atomic_load_n(&slots[i].owner, __ATOMIC_ACQUIRE);
		if (!owner || __atomic_load_n(&slots[i].st.e.hdr.type, __ATOMIC_ACQUIRE) != CW_REC_CALL)
			continue;
		memcpy(&st, &slots[i].st, sizeof(st));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (st.e.hdr.type != CW_REC_CALL || st.e.hdr.ts_ns >= cutoff_mono_ns ||
		    !__atomic_compare_exchange_n(&slots[i].owner, &owner, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		hand_over(&st, fn, ctx);
		n++;
	}
	return n;
}

/* Open calls in call_state, the table of calls whose slot was held: those
 * older than the cutoff taken (deleted and handed over), or with peek_pid,
 * those of that process handed over as copies. */
static int walk_hashed(int fd, uint64_t cutoff_mono_ns, uint32_t peek_pid,
		       void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	struct cw_call_key key, next;
	struct cw_call_state st;
	int n = 0, i, more;

	if (bpf_map_get_next_key(fd, NULL, &key))
		return 0;
	/* The next key is read before the current one is deleted: a walk
	 * from a deleted key restarts at the first (so does one from a key
	 * the probes just deleted; the bound keeps that finite). The side
	 * whose delete succeeds owns the call: a return that loses discards
	 * its record. */
	for (i = 0; i < INFLIGHT_SWEEP_MAX; i++, key = next) {
		more = !bpf_map_get_next_key(fd, &key, &next);
		if (!bpf_map_lookup_elem(fd, &key, &st) && st.e.hdr.type == CW_REC_CALL &&
		    (peek_pid ? st.e.hdr.pid == peek_pid
			      : st.e.hdr.ts_ns < cutoff_mono_ns && !bpf_map_delete_elem(fd, &key))) {
			hand_over(&st, fn, ctx);
			n++;
		}
		if (!more)
			break;
	}
	return n;
}

int cw_cuda_probes_peek_inflight(struct cw_cuda_probes *cp, uint32_t pid,
				 void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.call_state), n = 0;
	struct cw_call_state st;

	if (fd < 0 || !cp->slots)
		return -EBADF;
	if (!pid) /* walk_hashed() would take, not peek */
		return 0;
	/* A copy that races with the return is at worst a call that just
	 * ended: the caller only reads it. */
	for (size_t k = 0; k < CW_CALL_SLOTS; k++) {
		if (!__atomic_load_n(&cp->slots[k].owner, __ATOMIC_ACQUIRE))
			continue;
		memcpy(&st, &cp->slots[k].st, sizeof(st));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (st.e.hdr.type != CW_REC_CALL || st.e.hdr.pid != pid)
			continue;
		hand_over(&st, fn, ctx);
		n++;
	}
	return n + walk_hashed(fd, 0, pid, fn, ctx);
}

int cw_cuda_probes_take_inflight(struct cw_cuda_probes *cp, uint64_t cutoff_mono_ns,
				 void (*fn)(void *ctx, const struct cw_call_entry *e), void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.call_state);

	if (fd < 0 || !cp->slots)
		return -EBADF;
	return take_slots(cp->slots, cutoff_mono_ns, fn, ctx) + walk_hashed(fd, cutoff_mono_ns, 0, fn, ctx);
}

int cw_cuda_probes_agg(struct cw_cuda_probes *cp, unsigned op, struct cw_cuda_agg *out)
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(cp->skel->maps.agg_hist), c, b;
	struct cw_cuda_agg *vals;
	uint32_t k = op;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || op >= CW_OP_MAX)
		return -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &k, vals)) {
		rc = -errno;
		goto out;
	}
	for (c = 0; c < ncpu; c++) {
		out->count += vals[c].count;
		out->sum_ns += vals[c].sum_ns;
		if (vals[c].max_ns > out->max_ns)
			out->max_ns = vals[c].max_ns;
		for (b = 0; b < CW_AGG_BUCKETS; b++)
			out->buckets[b] += vals[c].buckets[b];
	}
out:
	free(vals);
	return rc;
}

void cw_cuda_probes_fold_set(struct cw_cuda_probes *cp, int64_t mono_to_wall_ns, const uint64_t thresh[CW_OP_MAX])
{
	/* Plain stores into the mmapped .bss: each probe hit loads a whole
	 * 8-byte word, old or new. */
	cp->skel->bss->fold_wall_off = mono_to_wall_ns;
	memcpy((void *)cp->skel->bss->fold_thresh, thresh, sizeof(cp->skel->bss->fold_thresh));
}

/* The closed seconds of fold_slots (cuda.bpf.h): each LIVE slot of a
 * second up to last_second is copied, zeroed and freed (FREE stored last,
 * so a claimant starts from zero), then handed to fn. Returns the slots
 * drained. */
static int drain_fold_slots(struct cw_cuda_probes *cp, int64_t last_second, struct cw_fold_val *v,
			    void (*fn)(void *ctx, const struct cw_fold_key *k, const struct cw_fold_val *v),
			    void *ctx)
{
	struct cw_fold_key k;
	unsigned i;
	int n = 0;

	for (i = 0; cp->fold_slots && i < cp->fold_nslots; i++) {
		struct cw_fold_slot *s = &cp->fold_slots[i];

		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != CW_FOLD_SLOT_LIVE || s->key.second > last_second)
			continue;
		memcpy(&k, &s->key, sizeof(k));
		memcpy(v, &s->val, sizeof(*v));
		memset(&s->key, 0, sizeof(s->key));
		memset(&s->val, 0, sizeof(s->val));
		__atomic_store_n(&s->state, CW_FOLD_SLOT_FREE, __ATOMIC_RELEASE);
		fn(ctx, &k, v);
		n++;
	}
	return n;
}

int cw_cuda_probes_fold_drain(struct cw_cuda_probes *cp, int64_t last_second,
			      void (*fn)(void *ctx, const struct cw_fold_key *k, const struct cw_fold_val *v),
			      void *ctx)
{
	int fd = bpf_map__fd(cp->skel->maps.fold_hist), n = 0, nk = 0, i, rc = 0;
	struct cw_fold_key *keys, cur, next;
	struct cw_fold_val *v;
	const void *prev = NULL;

	if (fd < 0)
		return -EBADF;
	keys = calloc(cp->fold_max, sizeof(*keys));
	v = malloc(sizeof(*v));
	if (!keys || !v) {
		rc = -ENOMEM;
		goto out;
	}
	n = drain_fold_slots(cp, last_second, v, fn, ctx);
	/* Keys first, then lookups and deletes: deleting while walking can
	 * restart the walk. */
	while (nk < (int)cp->fold_max && !bpf_map_get_next_key(fd, prev, &next)) {
		if (next.second <= last_second)
			keys[nk++] = next;
		cur = next;
		prev = &cur;
	}
	for (i = 0; i < nk; i++) {
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], v)) {
			if (bpf_map_lookup_elem(fd, &keys[i], v) || bpf_map_delete_elem(fd, &keys[i]))
				continue;
		}
		fn(ctx, &keys[i], v);
		n++;
	}
	rc = n;
out:
	free(keys);
	free(v);
	return rc;
}

