/* The host report of `causeway check` and the MCP check tool (one
 * implementation, two front ends): kernel and BTF, privileges, tracefs,
 * BPF features, the CUDA and NCCL libraries, CPython installs, the GPU and
 * NVML, the config. docs/check.md describes the object. */
#ifndef CW_CHECK_REPORT_H
#define CW_CHECK_REPORT_H

#include <jansson.h>

/* What the report names from its caller's settings. */
struct cw_check_env {
	const char *node;     /* the node name in effect */
	const char *store;    /* the default store path */
	const char *nvml_lib; /* NULL: $CW_NVML_LIB or libnvidia-ml.so.1 */
	int fail_exit;        /* the report's "exit" when an item failed (0 otherwise) */
	int load;             /* load (and unload) the BPF objects as trace would */
};

/* *out = {"ok", "exit", "checks", "libraries", "python", "gpus",
 * "kernel_features", "bpf_programs"}.
 * Returns 0 or -ENOMEM (*out NULL). */
int cw_check_report(const struct cw_check_env *env, json_t **out);

#endif
