/* The rule table (rules.h). Order matters within a phase: the GPU
 * telemetry rules come first, since on equal shares the device's own
 * measured state (clocks, memory) is the more specific cause (without GPU
 * samples they never apply); cfs_throttling refines before
 * noisy_neighbour; node-wide chains appear in this order. */
#include "analysis/rules/rules.h"

const struct cw_rule cw_rules[] = {
	{"thermal_throttling", cw_rule_thermal_throttling, CW_RULE_OP | CW_RULE_GPU, 0},
	{"power_capping", cw_rule_power_capping, CW_RULE_OP | CW_RULE_GPU, 0},
	{"gpu_memory_pressure", cw_rule_gpu_memory_pressure, CW_RULE_OP | CW_RULE_GPU, 0},
	{"cpu_preemption", cw_rule_cpu_preemption, CW_RULE_OP, 0},
	{"io_contention", cw_rule_io_contention, CW_RULE_OP, 0},
	{"memory_pressure", cw_rule_memory_pressure, CW_RULE_OP, 0},
	{"cold_start", cw_rule_cold_start, CW_RULE_OP | CW_RULE_NO_TAIL, 0},
	{"periodic_allocator", cw_rule_periodic_allocator, CW_RULE_OP | CW_RULE_NO_TAIL, 0},
	{"gpu_time_slicing", cw_rule_gpu_time_slicing, CW_RULE_OP, 0},
	{"network", cw_rule_network, CW_RULE_OP, 0},
	{"graph_launch_tail", cw_rule_graph_launch_tail, CW_RULE_OP, 0},
	{"host_memory", cw_rule_host_memory, CW_RULE_OP, 0},
	{"throughput_drop", cw_rule_throughput_drop, CW_RULE_FALLBACK, 0},
	{"cfs_throttling", cw_rule_cfs_throttling, CW_RULE_REFINE, 0},
	{"noisy_neighbour", cw_rule_noisy_neighbour, CW_RULE_REFINE, 0},
	{"memcpy_bound", cw_rule_memcpy_bound, CW_RULE_NODE, 0},
	{"dataloader_starvation", cw_rule_dataloader_starvation, CW_RULE_NODE, 0},
	{"graph_churn", cw_rule_graph_churn, CW_RULE_NODE, 0},
	{"oom_kill", cw_rule_oom_kill, CW_RULE_NODE, 4},
	{"xid_fault", cw_rule_xid_fault, CW_RULE_NODE, 0},
	{"training_stall", cw_rule_training_stall, CW_RULE_NODE, 0},
	{"call_errors", cw_rule_call_errors, CW_RULE_NODE, 8},
	{"straggler", cw_rule_straggler, CW_RULE_CROSS, 0},
	{"nccl_arrival", cw_rule_nccl_arrival, CW_RULE_CROSS | CW_RULE_PEERS, 2 + CW_NCCL_MAX_PEERS},
	{"inference_latency", cw_rule_inference_latency, CW_RULE_CROSS, 8},
};

const size_t cw_nrules = sizeof(cw_rules) / sizeof(cw_rules[0]);
