/* nccl_arrival: which rank arrives last at each collective, and whether a
 * collective was never entered by some ranks. Pure computation over the
 * calls of nccl_calls (loaded by rules/nccl_chains.c), so the unit tests
 * and bench/ feed it arrays directly.
 *
 * A collective is one (communicator id, sequence number): the n-th
 * collective every rank of the communicator enters. Entry times are wall
 * clock with each node's clock offset removed. See docs/rules.md
 * ("nccl_straggler", "nccl_hang", "comm_bound") for the thresholds. */
#ifndef CW_ANALYSIS_NCCL_ARRIVAL_H
#define CW_ANALYSIS_NCCL_ARRIVAL_H

#include <stddef.h>
#include <stdint.h>

/* A lag counts when the last rank entered at least this long after the
 * next-latest. */
#define CW_NCCL_MIN_LAG_NS 100000ULL
/* The straggler: the rank holding >= this share of all counted lag, late
 * in >= CW_NCCL_MIN_LATE collectives, by >= CW_NCCL_MIN_MEAN_LAG_NS on
 * average. */
#define CW_NCCL_MIN_LAG_SHARE 0.6
#define CW_NCCL_MIN_LATE 3
#define CW_NCCL_MIN_MEAN_LAG_NS 1000000ULL
/* A hang: a collective entered by some ranks and not all for longer than
 * max(CW_NCCL_HANG_STEPS x the median step, the floor). */
#define CW_NCCL_HANG_STEPS 20
#define CW_NCCL_HANG_MIN_NS 10000000000ULL
/* Communication-bound: the median rank spends >= this share of its steps
 * waiting for collectives to complete, with no straggler to blame. */
#define CW_NCCL_COMM_BOUND_SHARE 0.5
#define CW_NCCL_COMM_MIN_GROUPS 10

#define CW_NCCL_MAX_RANKS 1024
#define CW_NCCL_MAX_LATE 512

struct cw_nccl_call {
	int64_t comm_id;
	int64_t seq;
	int64_t entry;      /* wall ns, clock offset removed */
	int64_t entry_mono; /* the rank's own monotonic clock */
	int64_t done;       /* completion (wall, offset removed); INT64_MIN unknown */
	int64_t bytes;      /* -1 unknown */
	int32_t rank_idx;   /* into the ranks array */
	int32_t op;         /* enum cw_op */
	int32_t rank;       /* the caller's rank in this communicator; -1 unknown */
};

struct cw_nccl_rank {
	char node[64];
	char comm[32];
	int64_t pid, tid; /* tid: the thread that calls NCCL */
	int rank, nranks; /* -1 unknown */
	/* The communicator its ncclCommInitRank joined (0 none loaded): a
	 * member that never entered a collective still counts (a hang at
	 * the first collective). */
	int64_t init_comm;
	/* Where its node's trace ended (wall, offset removed; 0 unknown): in
	 * a merged file an unfinished call ends there, not at the newest
	 * time of every node. */
	int64_t node_end;
	/* Filled by the analysis. */
	uint64_t calls, late, lag_ns, wait_ns, step_ns;
	uint64_t waited_ns; /* waiting for the straggler where it was late */
	uint64_t groups;    /* complete collectives it took part in */
	int64_t first_entry, last_entry, last_seq;
};

struct cw_nccl_late {
	int64_t entry, entry_mono, lag_ns, seq, comm_id;
};

struct cw_nccl_arrival {
	uint64_t groups;          /* collectives seen */
	uint64_t complete;        /* entered by every rank of the communicator */
	uint64_t total_lag_ns;    /* counted lag of every rank */
	int straggler;            /* rank index, -1 none */
	struct cw_nccl_late late[CW_NCCL_MAX_LATE]; /* the straggler's, largest lags first */
	size_t nlate;
	/* Hang. */
	int hang;
	int64_t hang_comm, hang_seq, hang_started, hang_for_ns, median_step_ns;
	uint64_t hang_threshold_ns;
	int missing[16]; /* rank indexes */
	int nmissing;
	/* The hung communicator's members (rank indexes): a merged file may
	 * hold other jobs' ranks beside them. */
	int hang_members;
	int64_t hang_until; /* the hang's clock: its ranks' nodes' newest end */
	uint8_t hang_member[CW_NCCL_MAX_RANKS];
	/* Communication. */
	double comm_share;  /* median over ranks of wait / step time */
	double busbw_gbps;  /* median implied bus bandwidth, GB/s */
	int64_t bytes_p50, transfer_p50_ns;
	int comm_op;        /* the most frequent collective */
};

/* Sorts calls by (comm_id, seq, entry) in place and analyses them.
 * observed_until: the newest time the store saw (wall), for hangs;
 * hang_min_ns 0 means CW_NCCL_HANG_MIN_NS. Returns 0 or -errno. */
int cw_nccl_arrival_analyse(struct cw_nccl_call *calls, size_t n, struct cw_nccl_rank *ranks, int nranks,
			    int64_t observed_until, uint64_t hang_min_ns, struct cw_nccl_arrival *out);

/* Bus bandwidth factor of a collective over n ranks (nccl-tests'
 * convention) and the bytes it moves given the per-rank count bytes. */
double cw_nccl_busbw_factor(int op, int n);
int64_t cw_nccl_total_bytes(int op, int64_t bytes, int n);

#endif
