/* The engines table. Series names are those each engine's /metrics
 * exposes (vLLM 0.6-0.11 and V1, SGLang 0.4, TGI 3.x, llama.cpp's
 * llama-server --metrics, Triton 2.x); where an engine renamed one, the
 * newer name comes first. */
#include "inference/engines.h"

#include <string.h>

const struct cw_engine cw_engines[] = {
	{
		.name = "vllm",
		.comms = { "vllm" },
		.argv_words = { "vllm", "vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server" },
		.metrics_path = "/metrics",
		.figures = {
			[CW_EF_QUEUE_DEPTH] = { "vllm:num_requests_waiting" },
			[CW_EF_RUNNING] = { "vllm:num_requests_running" },
			[CW_EF_KV_CACHE_USAGE] = { "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc" },
			[CW_EF_PREEMPTIONS] = { "vllm:num_preemptions_total", "vllm:num_preemptions" },
		},
	},
	{
		.name = "sglang",
		.argv_words = { "sglang.launch_server", "sglang" },
		.metrics_path = "/metrics",
		.figures = {
			[CW_EF_QUEUE_DEPTH] = { "sglang:num_queue_reqs" },
			[CW_EF_RUNNING] = { "sglang:num_running_reqs" },
			[CW_EF_KV_CACHE_USAGE] = { "sglang:token_usage" },
		},
	},
	{
		.name = "tgi",
		.comms = { "text-generation" }, /* comm: the first 15 bytes of the router's name */
		.argv_words = { "text-generation-router", "text-generation-launcher" },
		.metrics_path = "/metrics",
		.figures = {
			[CW_EF_QUEUE_DEPTH] = { "tgi_queue_size" },
			[CW_EF_RUNNING] = { "tgi_batch_current_size" },
		},
	},
	{
		.name = "llama.cpp",
		.comms = { "llama-server" },
		.argv_words = { "llama-server" },
		.metrics_path = "/metrics",
		.figures = {
			[CW_EF_QUEUE_DEPTH] = { "llamacpp:requests_deferred" },
			[CW_EF_RUNNING] = { "llamacpp:requests_processing" },
			/* Gone from current builds (Debian's llama.cpp 0.7.0 has
			 * no KV-cache series); older ones had it. */
			[CW_EF_KV_CACHE_USAGE] = { "llamacpp:kv_cache_usage_ratio" },
		},
	},
	{
		.name = "triton",
		.comms = { "tritonserver" },
		.argv_words = { "tritonserver" },
		.metrics_path = "/metrics",
		.figures = {
			[CW_EF_QUEUE_DEPTH] = { "nv_inference_pending_request_count" },
		},
	},
	{
		.name = "ollama",
		.comms = { "ollama" },
		.argv_words = { "ollama" },
	},
};
const size_t cw_nengines = sizeof(cw_engines) / sizeof(cw_engines[0]);

static const char *const figure_names[CW_EF_N] = {
	[CW_EF_QUEUE_DEPTH] = "queue_depth",
	[CW_EF_RUNNING] = "running",
	[CW_EF_KV_CACHE_USAGE] = "kv_cache_usage_ratio",
	[CW_EF_PREEMPTIONS] = "preemptions_total",
};

const char *cw_engine_figure_name(enum cw_engine_figure f)
{
	return (unsigned)f < CW_EF_N ? figure_names[f] : "";
}

/* comm is at most 15 bytes: a longer name ("text-generation-router") is
 * matched on its first 15. */
static int comm_is(const char *comm, const char *want)
{
	return !strncmp(comm, want, 15);
}

/* word is one argv element, or its last path component, or a dotted
 * module path's (python -m vllm.entrypoints...) element. */
static int argv_has(const char *argv, size_t len, const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i < len;) {
		const char *a = argv + i;
		size_t al = strnlen(a, len - i);
		const char *base = memrchr(a, '/', al);

		base = base ? base + 1 : a;
		if ((size_t)(a + al - base) == wl && !memcmp(base, word, wl))
			return 1;
		/* "vllm.entrypoints.openai.api_server" names vllm */
		if (al > wl && !memcmp(a, word, wl) && a[wl] == '.')
			return 1;
		i += al + 1;
	}
	return 0;
}

const struct cw_engine *cw_engine_of(const char *comm, const char *argv, size_t argv_len)
{
	for (size_t e = 0; e < cw_nengines; e++) {
		const struct cw_engine *g = &cw_engines[e];

		for (size_t i = 0; i < 4 && g->comms[i]; i++)
			if (comm && comm_is(comm, g->comms[i]))
				return g;
		for (size_t i = 0; i < 4 && g->argv_words[i]; i++)
			if (argv && argv_has(argv, argv_len, g->argv_words[i]))
				return g;
	}
	return NULL;
}
