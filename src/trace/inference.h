/* trace --inference PORT[,PORT...]|auto: follow the HTTP requests of the
 * servers listening there (docs/inference.md). The server probes
 * (loader/http_probes.h) are loaded at start; the listeners are looked
 * for then and again while tracing, and each server found is tracked
 * (its threads' off-CPU time, memory and I/O are recorded like a CUDA
 * process's) and its listening sockets registered with the probes. */
#ifndef CW_TRACE_INFERENCE_H
#define CW_TRACE_INFERENCE_H

#include <stdint.h>
#include <stddef.h>

#include <bpf/libbpf.h>

struct trace;
struct trace_inference;

/* Loads the probes and looks for the listeners once. spec is the option's
 * value (checked already). Returns 0 or -errno with err filled. */
int trace_inference_start(struct trace_inference **out, struct trace *t, const char *spec, char *err,
			  size_t errlen);
int trace_inference_add_ring(struct trace_inference *ti, struct ring_buffer **rb, ring_buffer_sample_fn fn,
			     void *ctx);
/* Looks for listeners again when due (every 200 ms until a first server
 * is found, for 30 s at most; then every 2 s). */
void trace_inference_poll(struct trace_inference *ti, uint64_t now_ns);
/* Stops the thread that asks the engines' own /metrics
 * (engine_scrape.h): before the writer goes. */
void trace_inference_stop(struct trace_inference *ti);
/* Lock held: the counters of this session (trace.engine_scrape.*). */
void trace_inference_counters(struct trace_inference *ti);
void trace_inference_free(struct trace_inference *ti);
/* 1 when spec is "auto" or a list of at most CW_INFERENCE_MAX_PORTS ports. */
int trace_inference_spec_ok(const char *spec);

#endif
