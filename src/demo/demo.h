/* causeway demo: synthetic GPU incidents written through the real
 * pipeline (decode -> pairing -> writer) into a store, so that explain on
 * a demo database is explain on real rows. docs/demo.md describes every
 * scenario and the signature it plants. */
#ifndef CW_DEMO_DEMO_H
#define CW_DEMO_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct cw_demo_train;

struct cw_demo_scenario {
	const char *name;
	const char *title;  /* what it simulates, one line */
	const char *expect; /* the root_cause.kind explain should name; NULL: no chain */
	/* Adjusts tr->cfg and sets tr->hooks / tr->ctx before the run. */
	void (*setup)(struct cw_demo_train *tr);
};

#define CW_DEMO_DEFAULT_SCENARIO "incident"

/* NULL when name is unknown. */
const struct cw_demo_scenario *cw_demo_find(const char *name);
/* The table, in display order. */
const struct cw_demo_scenario *const *cw_demo_scenarios(size_t *n);

struct cw_demo_opts {
	const struct cw_demo_scenario *scenario;
	uint64_t seed;
	double speed;        /* 0: as fast as possible; > 0: x real time */
	int progress;        /* paced runs report progress on stderr */
	const char *node;    /* the node name rows carry */
	uint64_t wall_start; /* wall-clock ns of the run's start; 0: the fixed 2026-01-01 */
	const char *command; /* recorded in the session row */
};

struct cw_demo_result {
	uint64_t records;     /* raw records fed to the pipeline */
	uint64_t rejected;    /* records the pipeline refused (0 unless a bug) */
	uint64_t events, offcpu, snapshots; /* rows written */
	uint64_t requests;    /* inference requests stored (inference-ttft) */
	uint64_t calls;       /* paired calls */
	uint64_t steps;       /* training steps simulated */
	uint64_t synthetic_ns; /* span of synthetic time */
	uint64_t start_wall_ns, end_wall_ns;
	double elapsed_s;     /* wall time of the feed */
};

/* Generates o->scenario into st (opened with CW_STORE_CREATE): one session
 * row of kind "demo:<name>", then every record through cw_pipeline_feed().
 * Returns 0 or -errno. */
int cw_demo_generate(struct cw_store *st, const struct cw_demo_opts *o, struct cw_demo_result *res);

#endif
