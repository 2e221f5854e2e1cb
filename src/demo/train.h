/* The synthetic training loop every demo scenario starts from: a PyTorch
 * process (comm "python", pid 4821) with one DataLoader worker process,
 * stepping through batches on GPU 0:
 *
 *   batch from the loader -> cudaMemcpyAsync HtoD (data.py:51 __next__)
 *   -> forward launches (model.py) -> occasional cudaMalloc
 *   -> backward launches (train.py:90) -> optimizer launches (train.py:92)
 *   -> cudaFree -> cudaStreamSynchronize (loss.item(), train.py:95)
 *
 * with Python time between calls, a GPU timeline the sync waits on, host
 * snapshots once a second, ordinary off-CPU intervals (short blocked
 * waits inside syncs, rare kworker preemptions between calls) and
 * process lifecycle records. A scenario plants its cause through hooks
 * that see every planned call and every second before they are queued. */
#ifndef CW_DEMO_TRAIN_H
#define CW_DEMO_TRAIN_H

#include <stdint.h>

#include "demo/gen.h"
#include "store/writer.h"

#define CW_DEMO_MAX_OFF 16

/* One off-CPU piece inside a planned call or gap; the builder lays the
 * pieces out evenly across the call so they never overlap. */
struct cw_demo_off {
	uint64_t len;
	int reason; /* CW_OFFCPU_* */
	const struct cw_demo_task *by, *waker;
};

enum cw_demo_gap {
	CW_GAP_NONE = 0,
	CW_GAP_BATCH, /* waiting for / unpacking the next batch */
	CW_GAP_PY,    /* Python between two CUDA calls */
};

/* A call (op != 0) or a stretch of Python time (op == 0) of the main
 * thread, before it is queued. Hooks may lengthen it and add pieces. */
struct cw_demo_plan {
	unsigned op;
	int gap;      /* enum cw_demo_gap when op == 0 */
	int site;     /* enum cw_demo_site */
	int step;     /* training step, -1 during set-up */
	uint64_t nth; /* how many calls of op came before this one */
	uint64_t start, dur;
	uint64_t args[4];
	int64_t ret;  /* the call's return code: 0 success */
	int noff;
	struct cw_demo_off off[CW_DEMO_MAX_OFF];
};

/* Lengthens the plan by len spent off-CPU. */
void cw_demo_plan_off(struct cw_demo_plan *p, uint64_t len, int reason, const struct cw_demo_task *by,
		      const struct cw_demo_task *waker);
/* Lengthens the plan by extra spent on CPU (spinning, copying). */
void cw_demo_plan_stretch(struct cw_demo_plan *p, uint64_t extra);

struct cw_demo_train;

struct cw_gpu_sample;

struct cw_demo_hooks {
	/* Every call and gap of the main thread, before it is queued. */
	void (*plan)(struct cw_demo_train *tr, struct cw_demo_plan *p);
	/* Every second [t, t + 1 s) of the run, before its snapshot (taken
	 * at t + 1 s) is queued: adjust s, queue background activity. */
	void (*second)(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s);
	/* Metadata rows of the scenario's other processes (cgroups, names)
	 * as trace would read them from /proc; NULL for none. */
	int (*meta)(struct cw_demo_train *tr, struct cw_writer *w);
	/* The adjustment of the GPU samples cw_demo_gpu_meta writes
	 * (demo/gpu.h); NULL: the healthy device. */
	void (*gpu_adjust)(struct cw_demo_train *tr, uint64_t t, struct cw_gpu_sample *s);
};

struct cw_demo_train_cfg {
	uint64_t duration_ns;  /* training time after set-up */
	int launches_fwd, launches_bwd, launches_opt;
	uint64_t launch_ns;    /* CPU time of one cudaLaunchKernel */
	uint64_t gap_ns;       /* Python time between launches */
	uint64_t kernel_ns;    /* GPU time of one kernel */
	unsigned copy_op;      /* CW_OP_cudaMemcpyAsync or CW_OP_cudaMemcpy */
	uint64_t copy_bytes, copy_ns;
	int malloc_every;      /* steps between cudaMalloc/cudaFree pairs */
	uint64_t malloc_ns, free_ns;
	int hostalloc_every;   /* steps between cudaHostAlloc calls, 0 never */
	uint64_t hostalloc_ns;
	uint64_t batch_ns;     /* Python time taking a batch from the loader */
	int init_allocs;       /* cudaMalloc calls of model set-up */
};

struct cw_demo_train {
	struct cw_demo_gen *g;
	struct cw_demo_train_cfg cfg;
	const struct cw_demo_hooks *hooks;
	void *ctx;            /* the scenario's state */
	uint64_t t0;          /* start of training (mono), after set-up */
	uint64_t end;         /* end of training (mono) */
	int step;
	uint64_t steps;       /* steps run, when finished */
	uint64_t gpu_free;    /* when GPU 0 drains what was launched so far */
	uint64_t nth[CW_OP_MAX];
	const char *cgroup_path; /* the trainer's cgroup; NULL: a default pod-like one */
	/* Where the run is written, for rows trace writes outside the
	 * pipeline (GPU telemetry, demo/gpu.h). */
	struct cw_store *store;
	const char *node;
	int64_t session_id;
	int64_t mono_to_wall;
	/* Set by a scenario that is not one training process (the NCCL
	 * jobs of scenario_nccl.c): queues the whole run instead of
	 * cw_demo_train_run(). */
	void (*run)(struct cw_demo_train *tr);
	/* Set by a scenario without the training process (inference-ttft):
	 * no trainer rows are written. */
	int no_trainer;
};

/* Processes and threads of the loop. */
extern const struct cw_demo_task cw_demo_main_task;   /* python, 4821 */
extern const struct cw_demo_task cw_demo_worker_task; /* pt_data_worker, 4870 */
extern const struct cw_demo_task cw_demo_kworker;     /* kworker/3:1 */
extern const struct cw_demo_task cw_demo_irq;         /* swapper/3: wake-ups from interrupts */

void cw_demo_train_defaults(struct cw_demo_train_cfg *c);
/* Queues the whole run into g. */
void cw_demo_train_run(struct cw_demo_train *tr);
/* Writes the process, thread and cgroup rows of the loop (and calls the
 * scenario's meta hook). */
int cw_demo_train_meta(struct cw_demo_train *tr, struct cw_writer *w, uint64_t wall_start);

/* 1 when t (mono) lies in a window that opens first ns after tr->t0 and
 * then every period ns (period 0: once) for len ns. */
int cw_demo_in_window(const struct cw_demo_train *tr, uint64_t t, uint64_t first, uint64_t period, uint64_t len);
/* How much of [a, b) lies in such windows. */
uint64_t cw_demo_window_overlap(const struct cw_demo_train *tr, uint64_t a, uint64_t b, uint64_t first,
				uint64_t period, uint64_t len);

#endif
