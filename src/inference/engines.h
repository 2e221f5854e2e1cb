/* The inference engines `trace --inference auto` recognizes, and the
 * names their /metrics give to the figures causeway keeps (queue depth,
 * running requests, KV-cache use, preemptions). One table: a new engine
 * is one row. */
#ifndef CW_INFERENCE_ENGINES_H
#define CW_INFERENCE_ENGINES_H

#include <stddef.h>

/* The figures kept from an engine's /metrics (engine_metrics.name). */
enum cw_engine_figure {
	CW_EF_QUEUE_DEPTH = 0, /* requests waiting */
	CW_EF_RUNNING,         /* requests being processed */
	CW_EF_KV_CACHE_USAGE,  /* 0..1 */
	CW_EF_PREEMPTIONS,     /* counter */
	CW_EF_N
};

struct cw_engine {
	const char *name;               /* "vllm", "llama.cpp", ... */
	const char *comms[4];           /* a process comm that is this engine */
	const char *argv_words[4];      /* or a word in its argv (a Python module, a CLI) */
	const char *metrics_path;       /* "/metrics" */
	const char *figures[CW_EF_N][3]; /* the engine's series names per figure, newest first */
	double scale[CW_EF_N];          /* multiplies the value (a percentage to a ratio); 0 means 1 */
};

extern const struct cw_engine cw_engines[];
extern const size_t cw_nengines;

/* The engine a process is, from its comm and its argv (NUL-separated,
 * argv_len bytes); NULL when none. */
const struct cw_engine *cw_engine_of(const char *comm, const char *argv, size_t argv_len);
/* The name of a figure ("queue_depth", ...). */
const char *cw_engine_figure_name(enum cw_engine_figure f);

#endif
