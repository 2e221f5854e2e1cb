#include "demo/gpu.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "gpu/xid.h"
#include "store/gpu_store.h"
#include "util/timeutil.h"

#define GIB (1ULL << 30)

int cw_demo_gpu_write(struct cw_demo_train *tr, cw_demo_gpu_adjust adjust)
{
	struct cw_gpu_device d = {
		.index = 0, .uuid = "GPU-5c1f3e2a-7d41-4b8e-9c0a-2f6d8e1b4a77", .pci = "00000000:3B:00.0",
		.name = "NVIDIA H100 80GB HBM3", .mem_total = 80 * GIB, .power_limit_mw = 700000, .max_sm_mhz = 1980,
		.max_mem_mhz = 2619, .parent = -1,
	};
	struct cw_demo_rng *r = &tr->g->rng;
	struct cw_gpu_store *gs;
	int64_t energy = 3600000000LL; /* mJ since the driver loaded */
	int err;

	if ((err = cw_gpu_store_new(&gs, tr->store->db, tr->node, tr->session_id)))
		return err;
	err = cw_gpu_store_device(gs, &d, "570.124.06 (synthetic)", (uint64_t)((int64_t)CW_DEMO_MONO_BASE + tr->mono_to_wall));
	for (uint64_t t = tr->t0 - NSEC_PER_SEC; !err && t < tr->g->last_ns; t += NSEC_PER_SEC) {
		struct cw_gpu_sample s;

		cw_gpu_sample_clear(&s);
		s.device = 0;
		s.mono_ns = t;
		s.wall_ns = (uint64_t)((int64_t)t + tr->mono_to_wall);
		s.gpu_util = (int64_t)cw_demo_rng_range(r, 93, 99);
		s.mem_util = (int64_t)cw_demo_rng_range(r, 38, 46);
		s.mem_total = (int64_t)(80 * GIB);
		s.mem_used = (int64_t)(41 * GIB + cw_demo_rng_range(r, 0, 512) * (1 << 20));
		s.mem_reserved = 512LL << 20;
		s.temp_gpu = (int64_t)cw_demo_rng_range(r, 66, 71);
		s.temp_mem = s.temp_gpu + 6;
		s.power_mw = (int64_t)cw_demo_rng_range(r, 560000, 640000);
		s.sm_mhz = 1980;
		s.mem_mhz = 2619;
		s.reasons = 0;
		s.ecc_sbe = 0;
		s.ecc_dbe = 0;
		s.pcie_replay = 0;
		s.retired_sbe = s.retired_dbe = 0;
		s.remap_corr = s.remap_unc = s.remap_pending = s.remap_failure = 0;
		s.nvlink_errors = 0;
		if (adjust)
			adjust(tr, t, &s);
		if (s.mem_used >= 0 && s.mem_total > 0)
			s.mem_free = s.mem_total - s.mem_used - s.mem_reserved;
		energy += s.power_mw > 0 ? s.power_mw : 0; /* mW over one second = mJ */
		s.energy_mj = energy;
		cw_gpu_sample_sanitize(&s);
		err = cw_gpu_store_sample(gs, &s, d.uuid);
	}
	cw_gpu_store_free(gs);
	return err;
}

int cw_demo_gpu_xid(struct cw_demo_train *tr, struct cw_writer *w, uint64_t t, uint32_t code, uint32_t pid,
		    const char *comm, const char *text)
{
	const struct cw_xid_info *info = cw_xid_lookup(code);
	json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:s}", "pci", "0000:3b:00", "text", text, "from", "kmsg", "meaning",
			      info->name, "severity", info->severity);
	char *detail = d ? json_dumps(d, JSON_COMPACT) : NULL;
	struct cw_event_row r = {
		.mono_ns = t, .wall_ns = (uint64_t)((int64_t)t + tr->mono_to_wall), .pid = pid, .tid = pid,
		.comm = comm, .source = "gpu", .op = "xid", .detail = detail, .nargs = 1, .args = {code}, .device = 0,
	};
	int err = detail ? cw_writer_event(w, &r) : -ENOMEM;

	free(detail);
	json_decref(d);
	return err;
}

int cw_demo_gpu_meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	(void)w;
	return cw_demo_gpu_write(tr, tr->hooks->gpu_adjust);
}

int cw_demo_gpu_in_episode(struct cw_demo_train *tr, uint64_t t)
{
	return cw_demo_in_window(tr, t, 20 * NSEC_PER_SEC, 30 * NSEC_PER_SEC, 8 * NSEC_PER_SEC);
}

void cw_demo_gpu_slow_syncs(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	if (p->op == CW_OP_cudaStreamSynchronize && cw_demo_gpu_in_episode(tr, p->start))
		cw_demo_plan_stretch(p, p->dur * cw_demo_rng_range(&tr->g->rng, 25, 30) / 10);
}
