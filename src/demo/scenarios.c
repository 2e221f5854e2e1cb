/* The scenario table and the run: session row, writer, pipeline, the
 * training loop with the scenario's hooks, and the feed. */
#include "demo/demo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "demo/gen.h"
#include "demo/train.h"
#include "pipeline/pipeline.h"
#include "store/writer.h"
#include "tenant/resolve.h"
#include "util/timeutil.h"

extern const struct cw_demo_scenario cw_demo_scenario_incident;
extern const struct cw_demo_scenario cw_demo_scenario_cold_start;
extern const struct cw_demo_scenario cw_demo_scenario_memcpy_bottleneck;
extern const struct cw_demo_scenario cw_demo_scenario_periodic_spike;
extern const struct cw_demo_scenario cw_demo_scenario_cpu_contention;
extern const struct cw_demo_scenario cw_demo_scenario_gpu_steal;
extern const struct cw_demo_scenario cw_demo_scenario_io_contention;
extern const struct cw_demo_scenario cw_demo_scenario_memory_pressure;
extern const struct cw_demo_scenario cw_demo_scenario_dataloader_starvation;
extern const struct cw_demo_scenario cw_demo_scenario_throttle;
extern const struct cw_demo_scenario cw_demo_scenario_oom_kill;
extern const struct cw_demo_scenario cw_demo_scenario_network;
extern const struct cw_demo_scenario cw_demo_scenario_graph_churn;
extern const struct cw_demo_scenario cw_demo_scenario_graph_launch_tail;
extern const struct cw_demo_scenario cw_demo_scenario_host_memory;
extern const struct cw_demo_scenario cw_demo_scenario_healthy;
extern const struct cw_demo_scenario cw_demo_scenario_noisy_neighbour;
/* GPU telemetry scenarios (docs/gpu.md). */
extern const struct cw_demo_scenario cw_demo_scenario_xid_fault;
extern const struct cw_demo_scenario cw_demo_scenario_thermal_throttling;
extern const struct cw_demo_scenario cw_demo_scenario_power_capping;
extern const struct cw_demo_scenario cw_demo_scenario_gpu_memory_pressure;
extern const struct cw_demo_scenario cw_demo_scenario_training_stall;
extern const struct cw_demo_scenario cw_demo_scenario_nccl_straggler;
extern const struct cw_demo_scenario cw_demo_scenario_nccl_straggler_io;
extern const struct cw_demo_scenario cw_demo_scenario_nccl_straggler_input;
extern const struct cw_demo_scenario cw_demo_scenario_nccl_straggler_compute;
extern const struct cw_demo_scenario cw_demo_scenario_nccl_hang;
extern const struct cw_demo_scenario cw_demo_scenario_nccl_hang_start;
extern const struct cw_demo_scenario cw_demo_scenario_comm_bound;
/* Failing calls (docs/rules.md "Failing calls"). */
extern const struct cw_demo_scenario cw_demo_scenario_cuda_no_device;
extern const struct cw_demo_scenario cw_demo_scenario_cuda_oom;
extern const struct cw_demo_scenario cw_demo_scenario_nccl_error;
/* Inference serving (docs/rules.md "inference_latency"). */
extern const struct cw_demo_scenario cw_demo_scenario_inference_ttft;

static const struct cw_demo_scenario *const table[] = {
	&cw_demo_scenario_incident,
	&cw_demo_scenario_cold_start,
	&cw_demo_scenario_memcpy_bottleneck,
	&cw_demo_scenario_periodic_spike,
	&cw_demo_scenario_cpu_contention,
	&cw_demo_scenario_gpu_steal,
	&cw_demo_scenario_io_contention,
	&cw_demo_scenario_memory_pressure,
	&cw_demo_scenario_dataloader_starvation,
	&cw_demo_scenario_throttle,
	&cw_demo_scenario_oom_kill,
	&cw_demo_scenario_network,
	&cw_demo_scenario_graph_churn,
	&cw_demo_scenario_graph_launch_tail,
	&cw_demo_scenario_host_memory,
	&cw_demo_scenario_healthy,
	&cw_demo_scenario_noisy_neighbour,
	&cw_demo_scenario_xid_fault,
	&cw_demo_scenario_thermal_throttling,
	&cw_demo_scenario_power_capping,
	&cw_demo_scenario_gpu_memory_pressure,
	&cw_demo_scenario_training_stall,
	&cw_demo_scenario_nccl_straggler,
	&cw_demo_scenario_nccl_straggler_io,
	&cw_demo_scenario_nccl_straggler_input,
	&cw_demo_scenario_nccl_straggler_compute,
	&cw_demo_scenario_nccl_hang,
	&cw_demo_scenario_nccl_hang_start,
	&cw_demo_scenario_comm_bound,
	&cw_demo_scenario_cuda_no_device,
	&cw_demo_scenario_cuda_oom,
	&cw_demo_scenario_nccl_error,
	&cw_demo_scenario_inference_ttft,
};

const struct cw_demo_scenario *const *cw_demo_scenarios(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

const struct cw_demo_scenario *cw_demo_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i]->name, name))
			return table[i];
	return NULL;
}

int cw_demo_generate(struct cw_store *st, const struct cw_demo_opts *o, struct cw_demo_result *res)
{
	uint64_t wall_start = o->wall_start ? o->wall_start : CW_DEMO_WALL_BASE;
	int64_t off = (int64_t)wall_start - (int64_t)CW_DEMO_MONO_BASE;
	struct cw_demo_gen g;
	struct cw_demo_train tr;
	struct cw_writer *w = NULL;
	struct cw_pipeline *p = NULL;
	struct cw_pipeline_counters pc;
	struct cw_demo_feed_stats fs;
	char kind[64];
	int64_t sid = 0;
	int err;

	memset(res, 0, sizeof(*res));
	if (!o->scenario || !o->node)
		return -EINVAL;
	snprintf(kind, sizeof(kind), "demo:%s", o->scenario->name);
	struct cw_session_info si = {
		.node = o->node, .kind = kind, .started_wall_ns = wall_start, .mono_to_wall_ns = off,
		.host = o->node, .kernel = "6.8.0 (synthetic)", .gpu = "NVIDIA H100 80GB HBM3 (synthetic)",
		.driver = "570.124.06 (synthetic)", .cuda = "12.8", .python = "3.12.9", .command = o->command,
		.rank = 0, .local_rank = 0, .world_size = 1,
	};
	if ((err = cw_session_begin(st, &si, &sid)))
		return err;
	struct cw_writer_opts wo = { .node = o->node, .session_id = sid };
	if ((err = cw_writer_new(&w, st, &wo)))
		return err;
	struct cw_pipeline_opts po = { .writer = w, .mono_to_wall_ns = off, .py = &cw_demo_py_resolver };
	if ((err = cw_pipeline_new(&p, &po)))
		goto out;

	cw_demo_gen_init(&g, o->seed);
	memset(&tr, 0, sizeof(tr));
	tr.g = &g;
	tr.store = st;
	tr.node = o->node;
	tr.session_id = sid;
	tr.mono_to_wall = off;
	cw_demo_train_defaults(&tr.cfg);
	o->scenario->setup(&tr);
	if (tr.run)
		tr.run(&tr);
	else
		cw_demo_train_run(&tr);
	err = cw_demo_gen_feed(&g, p, o->speed, o->progress, &fs);
	res->records = fs.records;
	res->rejected = fs.rejected;
	res->elapsed_s = fs.elapsed_s;
	res->steps = tr.steps;
	res->synthetic_ns = g.last_ns > CW_DEMO_MONO_BASE ? g.last_ns - CW_DEMO_MONO_BASE : 0;
	res->start_wall_ns = wall_start;
	res->end_wall_ns = (uint64_t)((int64_t)g.last_ns + off);
	if (!err)
		err = cw_demo_train_meta(&tr, w, wall_start);
	/* The synthetic host is a pure cgroup v2 one, as its pod paths are. */
	if (!err)
		cw_writer_counter_set(w, "host.cgroup_layout", CW_CGROUP_UNIFIED);
	if (!err)
		err = cw_pipeline_finish(p, g.last_ns); /* calls still open (a hang) end unfinished */
	cw_pipeline_get_counters(p, &pc);
	res->calls = pc.calls;
	cw_demo_gen_release(&g);
	cw_pipeline_free(p);
	p = NULL;
	/* A record the store refused is a write error, not a bad record:
	 * report the store's own cause (a full disk). */
	if ((!err || err == -EPROTO) && pc.write_errors) {
		struct cw_writer_stats ws;

		cw_writer_get_stats(w, &ws);
		err = ws.last_error ? ws.last_error : -EIO;
	}
out:
	if (w) {
		int ferr = cw_writer_free(w);

		if (!err)
			err = ferr;
	}
	/* What the session stored, counted after the last flush. */
	if (!err) {
		sqlite3_stmt *s = NULL;

		if (sqlite3_prepare_v2(st->db,
				       "SELECT (SELECT count(*) FROM events WHERE session_id = ?1),"
				       " (SELECT count(*) FROM offcpu WHERE session_id = ?1),"
				       " (SELECT count(*) FROM snapshots WHERE session_id = ?1),"
				       " (SELECT count(*) FROM requests WHERE session_id = ?1)",
				       -1, &s, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(s, 1, sid);
			if (sqlite3_step(s) == SQLITE_ROW) {
				res->events = (uint64_t)sqlite3_column_int64(s, 0);
				res->offcpu = (uint64_t)sqlite3_column_int64(s, 1);
				res->snapshots = (uint64_t)sqlite3_column_int64(s, 2);
				res->requests = (uint64_t)sqlite3_column_int64(s, 3);
			}
		}
		sqlite3_finalize(s);
		err = cw_session_end(st, sid, res->end_wall_ns, off);
	}
	return err;
}
