/* The SQL that copies each table of an attached input ("src") into the
 * merged store, and the order tables are copied in (merge.c). */
#include "fleet/merge_int.h"
#include "store/migrate.h"

/* Relabelling: coalesce(:relabel, node) keeps the node unless the input
 * was given a new name. Offsets shift row ids past the merged rows. */
#define N_ "coalesce(:relabel, node)"

const struct cw_merge_table_sql cw_merge_tables[CW_MT_MAX] = {
	[CW_MT_SESSIONS] = { "sessions", 1,
		"INSERT INTO main.sessions (id, node, kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns,"
		" host, kernel, gpu, driver, cuda, python, rank, local_rank, world_size, command)"
		" SELECT id + :soff, " N_ ", kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns,"
		" host, kernel, gpu, driver, cuda, python, rank, local_rank, world_size, command"
		" FROM src.sessions ORDER BY id" },
	/* Stacks are interned by hash of their frames: equal hashes are the
	 * same stack on every node, so the first copy wins and events are
	 * re-pointed through temp.stack_map. */
	[CW_MT_STACKS] = { "stacks", 0,
		"INSERT OR IGNORE INTO main.stacks (hash, depth, frames)"
		" SELECT hash, depth, frames FROM src.stacks ORDER BY id" },
	/* python_via is schema v8's: an older input's comes from the frames */
	[CW_MT_PY_STACKS] = { "py_stacks", 0,
		"INSERT OR IGNORE INTO main.py_stacks (hash, depth, frames, user_file, user_line, user_function,"
		" python_via)"
		" SELECT hash, depth, frames, user_file, user_line, user_function, python_via FROM src.py_stacks"
		" ORDER BY id",
		"python_via",
		"INSERT OR IGNORE INTO main.py_stacks (hash, depth, frames, user_file, user_line, user_function,"
		" python_via)"
		" SELECT hash, depth, frames, user_file, user_line, user_function, " CW_PYVIA_FROM_FRAMES("frames")
		" FROM src.py_stacks ORDER BY id" },
	[CW_MT_PY_CODE] = { "py_code", 1,
		"INSERT OR IGNORE INTO main.py_code (node, pid, address, file, function, qualname, firstlineno)"
		" SELECT " N_ ", pid, address, file, function, qualname, firstlineno FROM src.py_code ORDER BY id" },
	/* Events are staged and written at the end in wall-clock order (see
	 * order_events()), so that ids grow with time across nodes as they do
	 * in a store written live: explain finds time ranges by bisecting ids. */
	[CW_MT_EVENTS] = { "events", 1,
		"INSERT INTO temp.events_stage (node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm,"
		" source, op, duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id,"
		" py_stack_id, anomalous)"
		" SELECT coalesce(:relabel, e.node), e.seq, e.session_id + :soff, e.wall_ns,"
		" e.mono_ns, e.pid, e.tid, e.cgroup_id, e.comm, e.source, e.op, e.duration_ns, e.arg0, e.arg1,"
		" e.arg2, e.arg3, e.bytes, e.detail, e.ret, e.device, sm.new, pm.new, e.anomalous"
		" FROM src.events e LEFT JOIN temp.stack_map sm ON sm.old = e.stack_id"
		" LEFT JOIN temp.pystack_map pm ON pm.old = e.py_stack_id ORDER BY e.id" },
	[CW_MT_OFFCPU] = { "offcpu", 1,
		"INSERT INTO main.offcpu (id, node, session_id, pid, tid, comm, start_mono_ns, end_mono_ns,"
		" wall_ns, duration_ns, reason, cpu, by_pid, by_tid, by_comm, by_cgroup_id, waker_pid, waker_comm)"
		" SELECT id + :ooff, " N_ ", session_id + :soff, pid, tid, comm, start_mono_ns, end_mono_ns,"
		" wall_ns, duration_ns, reason, cpu, by_pid, by_tid, by_comm, by_cgroup_id, waker_pid, waker_comm"
		" FROM src.offcpu ORDER BY id" },
	[CW_MT_SNAPSHOTS] = { "snapshots", 1,
		"INSERT INTO main.snapshots (id, node, session_id, mono_ns, wall_ns, cpu_pct, mem_pct,"
		" swap_used_bytes, load1, ncpu, page_alloc_per_s, io_bytes_per_s, io_busy_pct)"
		" SELECT id + :snoff, " N_ ", session_id + :soff, mono_ns, wall_ns, cpu_pct, mem_pct,"
		" swap_used_bytes, load1, ncpu, page_alloc_per_s, io_bytes_per_s, io_busy_pct"
		" FROM src.snapshots ORDER BY id" },
	[CW_MT_PROCESSES] = { "processes", 1,
		"INSERT INTO main.processes (node, pid, ppid, comm, cmdline, cgroup_id, rank, local_rank,"
		" world_size, start_wall_ns, exit_code)"
		" SELECT " N_ ", pid, ppid, comm, cmdline, cgroup_id, rank, local_rank, world_size,"
		" start_wall_ns, exit_code FROM src.processes" },
	[CW_MT_THREADS] = { "threads", 1,
		"INSERT INTO main.threads (node, tid, pid, comm) SELECT " N_ ", tid, pid, comm FROM src.threads" },
	/* The whole identity row (schema v3): runtime, container, pod,
	 * namespace, Slurm job, unit, tenant key and when it was seen, so a
	 * merged store filters and groups by tenant as its inputs do. An
	 * input from before v3 has the path and container label only. */
	[CW_MT_CGROUPS] = { "cgroups", 1,
		"INSERT INTO main.cgroups (node, cgroup_id, path, container, runtime, container_id, pod, pod_uid,"
		" namespace, qos, slurm_job, slurm_step, unit, tenant, first_seen_wall_ns, last_seen_wall_ns)"
		" SELECT " N_ ", cgroup_id, path, container, runtime, container_id, pod, pod_uid, namespace, qos,"
		" slurm_job, slurm_step, unit, tenant, first_seen_wall_ns, last_seen_wall_ns FROM src.cgroups",
		"tenant",
		"INSERT INTO main.cgroups (node, cgroup_id, path, container)"
		" SELECT " N_ ", cgroup_id, path, container FROM src.cgroups" },
	[CW_MT_KERNEL_NAMES] = { "kernel_names", 1,
		"INSERT INTO main.kernel_names (node, pid, handle, name)"
		" SELECT " N_ ", pid, handle, name FROM src.kernel_names" },
	/* A chain's JSON names its node too; a relabelled input gets the new
	 * name there as well (when the JSON is valid; otherwise kept as is). */
	[CW_MT_CHAINS] = { "chains", 1,
		"INSERT INTO main.chains (id, node, created_wall_ns, from_wall_ns, to_wall_ns, severity, kind, op,"
		" count, slow_count, p50_ns, p99_ns, tail_ratio, explained_share, pid, tid, rank, python_file,"
		" python_line, python_function, summary, json)"
		" SELECT id + :coff, " N_ ", created_wall_ns, from_wall_ns, to_wall_ns, severity, kind, op,"
		" count, slow_count, p50_ns, p99_ns, tail_ratio, explained_share, pid, tid, rank, python_file,"
		" python_line, python_function, summary,"
		" CASE WHEN :relabel IS NOT NULL AND json_valid(json) THEN json_set(json, '$.node', :relabel)"
		" ELSE json END FROM src.chains ORDER BY id" },
	/* errors: schema v10 (an older input's count holds its failures). */
	[CW_MT_AGGREGATES] = { "aggregates", 1,
		"INSERT INTO main.aggregates (node, source, op, second, count, sum_ns, max_ns, hist, errors)"
		" SELECT " N_ ", source, op, second, count, sum_ns, max_ns, hist, errors FROM src.aggregates",
		"errors",
		"INSERT INTO main.aggregates (node, source, op, second, count, sum_ns, max_ns, hist)"
		" SELECT " N_ ", source, op, second, count, sum_ns, max_ns, hist FROM src.aggregates" },
	[CW_MT_COUNTERS] = { "counters", 1,
		"INSERT INTO main.counters (node, session_id, name, value)"
		" SELECT " N_ ", session_id + :soff, name, value FROM src.counters" },
	/* NCCL communicators and calls (schema v3; absent from older inputs,
	 * which merge skips). comm_id and seq are the same on every node,
	 * which is what lets the arrival analysis meet ranks across nodes. */
	[CW_MT_NCCL_COMMS] = { "nccl_comms", 1,
		"INSERT INTO main.nccl_comms (node, pid, comm, comm_id, nranks, rank, parent_id, op,"
		" created_wall_ns, destroyed_wall_ns, async_error)"
		" SELECT " N_ ", pid, comm, comm_id, nranks, rank, parent_id, op, created_wall_ns,"
		" destroyed_wall_ns, async_error FROM src.nccl_comms" },
	[CW_MT_NCCL_CALLS] = { "nccl_calls", 1,
		"INSERT INTO main.nccl_calls (node, session_id, pid, tid, comm, comm_id, rank, nranks, seq, op,"
		" count, datatype, bytes, redop, peer, stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns)"
		" SELECT " N_ ", session_id + :soff, pid, tid, comm, comm_id, rank, nranks, seq, op,"
		" count, datatype, bytes, redop, peer, stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns"
		" FROM src.nccl_calls ORDER BY id" },
	/* Per-cgroup PSI and CPU throttling samples (schema v3), which
	 * explain's cfs_throttling reads. */
	[CW_MT_CGROUP_PRESSURE] = { "cgroup_pressure", 1,
		"INSERT INTO main.cgroup_pressure (node, session_id, cgroup_id, wall_ns, mono_ns, cpu_some_us,"
		" cpu_full_us, memory_some_us, memory_full_us, io_some_us, io_full_us, cpu_some_avg10,"
		" memory_some_avg10, io_some_avg10, nr_periods, nr_throttled, throttled_usec, quota_us, period_us)"
		" SELECT " N_ ", session_id + :soff, cgroup_id, wall_ns, mono_ns, cpu_some_us, cpu_full_us,"
		" memory_some_us, memory_full_us, io_some_us, io_full_us, cpu_some_avg10, memory_some_avg10,"
		" io_some_avg10, nr_periods, nr_throttled, throttled_usec, quota_us, period_us"
		" FROM src.cgroup_pressure ORDER BY rowid" },
	/* NVML telemetry (schema v6): the devices, their samples and the
	 * per-process memory, which the GPU rules (thermal, power, memory
	 * pressure) read per node. A uuid is the same device on any node, so
	 * the key is (node, uuid) as in the input. */
	[CW_MT_GPU_DEVICES] = { "gpu_devices", 1,
		"INSERT INTO main.gpu_devices (node, uuid, device, pci_bus_id, name, memory_total, power_limit_mw,"
		" max_sm_mhz, max_mem_mhz, mig, parent, driver, first_wall_ns)"
		" SELECT " N_ ", uuid, device, pci_bus_id, name, memory_total, power_limit_mw, max_sm_mhz,"
		" max_mem_mhz, mig, parent, driver, first_wall_ns FROM src.gpu_devices" },
	[CW_MT_GPU_SAMPLES] = { "gpu_samples", 1,
		"INSERT INTO main.gpu_samples (node, session_id, device, uuid, mono_ns, wall_ns, gpu_util, mem_util,"
		" mem_used, mem_free, mem_reserved, mem_total, temp_gpu, temp_mem, power_mw, energy_mj, sm_mhz,"
		" mem_mhz, clock_reasons, ecc_sbe, ecc_dbe, pcie_replay, retired_sbe, retired_dbe, remap_corr,"
		" remap_unc, remap_pending, remap_failure, nvlink_errors)"
		" SELECT " N_ ", session_id + :soff, device, uuid, mono_ns, wall_ns, gpu_util, mem_util, mem_used,"
		" mem_free, mem_reserved, mem_total, temp_gpu, temp_mem, power_mw, energy_mj, sm_mhz, mem_mhz,"
		" clock_reasons, ecc_sbe, ecc_dbe, pcie_replay, retired_sbe, retired_dbe, remap_corr, remap_unc,"
		" remap_pending, remap_failure, nvlink_errors FROM src.gpu_samples ORDER BY id" },
	[CW_MT_GPU_PROCESSES] = { "gpu_processes", 1,
		"INSERT INTO main.gpu_processes (node, session_id, device, mono_ns, wall_ns, pid, used_bytes, sm_util,"
		" mem_util)"
		" SELECT " N_ ", session_id + :soff, device, mono_ns, wall_ns, pid, used_bytes, sm_util, mem_util"
		" FROM src.gpu_processes ORDER BY id" },
	/* Calls folded in the kernel, per process (schema v9). */
	[CW_MT_FOLDED] = { "folded", 1,
		"INSERT INTO main.folded (node, pid, source, op, second, count, sum_ns, max_ns, hist)"
		" SELECT " N_ ", pid, source, op, second, count, sum_ns, max_ns, hist FROM src.folded" },
	/* Inference (schema v11). A request's id is referenced by nothing:
	 * the merged store numbers them afresh, in each input's order. The
	 * totals keep each node's own routes (its cap is per node). */
	[CW_MT_REQUESTS] = { "requests", 1,
		"INSERT INTO main.requests (node, session_id, wall_ns, mono_ns, pid, tid, resp_tid, cgroup_id, comm,"
		" conn_id, port, method, path, status, bytes_in, bytes_out, ttft_ns, duration_ns, streamed,"
		" body_events, itl_max_ns, itl_mean_ns, end_reason)"
		" SELECT " N_ ", session_id + :soff, wall_ns, mono_ns, pid, tid, resp_tid, cgroup_id, comm,"
		" conn_id, port, method, path, status, bytes_in, bytes_out, ttft_ns, duration_ns, streamed,"
		" body_events, itl_max_ns, itl_mean_ns, end_reason FROM src.requests ORDER BY id" },
	[CW_MT_REQUEST_TOTALS] = { "request_totals", 1,
		"INSERT INTO main.request_totals (node, port, method, route, status, count, duration_sum_ns,"
		" dur_le_10ms, dur_le_25ms, dur_le_50ms, dur_le_100ms, dur_le_250ms, dur_le_500ms, dur_le_1s,"
		" dur_le_2500ms, dur_le_5s, dur_le_10s, ttft_count, ttft_sum_ns, ttft_le_10ms, ttft_le_25ms,"
		" ttft_le_50ms, ttft_le_100ms, ttft_le_250ms, ttft_le_500ms, ttft_le_1s, ttft_le_2500ms, ttft_le_5s,"
		" ttft_le_10s, first_wall_ns, last_wall_ns) SELECT " N_ ", port, method, route, status, count,"
		" duration_sum_ns, dur_le_10ms, dur_le_25ms, dur_le_50ms, dur_le_100ms, dur_le_250ms, dur_le_500ms,"
		" dur_le_1s, dur_le_2500ms, dur_le_5s, dur_le_10s, ttft_count, ttft_sum_ns, ttft_le_10ms,"
		" ttft_le_25ms, ttft_le_50ms, ttft_le_100ms, ttft_le_250ms, ttft_le_500ms, ttft_le_1s, ttft_le_2500ms,"
		" ttft_le_5s, ttft_le_10s, first_wall_ns, last_wall_ns FROM src.request_totals" },
	[CW_MT_ENGINE_METRICS] = { "engine_metrics", 1,
		"INSERT INTO main.engine_metrics (node, session_id, wall_ns, pid, port, engine, name, value)"
		" SELECT " N_ ", session_id + :soff, wall_ns, pid, port, engine, name, value FROM src.engine_metrics"
		" ORDER BY rowid" },
};

/* Tables of the schema that merge fills through another one: the events
 * view's storage (calls and kevents with their interned threads, ops,
 * strings and argument rows) is written by inserting into the view, and
 * meta is merged key by key. Any other table of an input that is neither
 * here nor in cw_merge_tables stops the merge: its rows would be lost. */
const char *const cw_merge_via_other[] = {
	"calls", "kevents", "call_threads", "call_ops", "call_args", "strings", "meta", NULL,
};

/* The order rows are copied in: stacks before the events that point at
 * them, sessions first so offsets are known. */
const enum cw_merge_table cw_merge_copy_order[CW_MT_MAX] = {
	CW_MT_SESSIONS,  CW_MT_STACKS,    CW_MT_PY_STACKS, CW_MT_PY_CODE,      CW_MT_EVENTS,
	CW_MT_OFFCPU,    CW_MT_SNAPSHOTS, CW_MT_PROCESSES, CW_MT_THREADS,      CW_MT_CGROUPS,
	CW_MT_KERNEL_NAMES, CW_MT_CHAINS, CW_MT_AGGREGATES, CW_MT_COUNTERS,
	CW_MT_NCCL_COMMS, CW_MT_NCCL_CALLS, CW_MT_CGROUP_PRESSURE, CW_MT_GPU_DEVICES, CW_MT_GPU_SAMPLES,
	CW_MT_GPU_PROCESSES, CW_MT_FOLDED, CW_MT_REQUESTS, CW_MT_REQUEST_TOTALS, CW_MT_ENGINE_METRICS,
};

const char *cw_merge_table_name(enum cw_merge_table t)
{
	return (unsigned)t < CW_MT_MAX ? cw_merge_tables[t].name : "?";
}

int cw_merge_table_has_node(enum cw_merge_table t)
{
	return (unsigned)t < CW_MT_MAX && cw_merge_tables[t].has_node;
}

