/* thermal-throttling: three times in the run (8 s from t = 20 s, every
 * 30 s) the GPU's inlet air runs hot, it reaches its slowdown temperature
 * (94 C) and the driver's hardware thermal slowdown cuts the SM clock
 * from 1980 to ~560 MHz. Every step's kernels take ~3.5x as long, so
 * loss.item()'s cudaStreamSynchronize spins ~3.5x longer; nothing on the
 * host changes. GPU telemetry (one NVML sample a second) shows
 * hw_thermal + sw_thermal with the clock drop. -> thermal_throttling. */
#include "demo/demo.h"
#include "demo/gpu.h"
#include "demo/train.h"
#include "util/timeutil.h"

static void adjust(struct cw_demo_train *tr, uint64_t t, struct cw_gpu_sample *s)
{
	if (!cw_demo_gpu_in_episode(tr, t)) {
		s->temp_gpu += 10; /* a warm rack: 76-81 C, still under the slowdown point */
		return;
	}
	s->temp_gpu = 94;
	s->temp_mem = 101;
	s->sm_mhz = (int64_t)cw_demo_rng_range(&tr->g->rng, 540, 585);
	s->power_mw = (int64_t)cw_demo_rng_range(&tr->g->rng, 300000, 340000);
	s->reasons = (int64_t)(CW_GPU_REASON_HW_THERMAL | CW_GPU_REASON_SW_THERMAL | CW_GPU_REASON_HW_SLOWDOWN);
}

static const struct cw_demo_hooks hooks = {cw_demo_gpu_slow_syncs, NULL, cw_demo_gpu_meta, adjust};

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_thermal_throttling = {
	"thermal-throttling",
	"the GPU reaches 94 C three times and hardware thermal slowdown cuts its SM clock to ~560 MHz",
	"thermal_throttling",
	setup,
};
