#include "gpu/gpu.h"

#include <stdio.h>
#include <string.h>

void cw_gpu_sample_clear(struct cw_gpu_sample *s)
{
	s->device = -1;
	s->mono_ns = s->wall_ns = 0;
	for (int i = 0; i < CW_GPU_NREADINGS; i++)
		*cw_gpu_reading(s, i) = -1;
}

static int bound(int64_t *v, int64_t lo, int64_t hi)
{
	if (*v == -1 || (*v >= lo && *v <= hi))
		return 0;
	*v = -1;
	return 1;
}

int cw_gpu_sample_sanitize(struct cw_gpu_sample *s)
{
	const int64_t counter_max = (int64_t)1 << 53;
	int n = 0;

	n += bound(&s->gpu_util, 0, 100);
	n += bound(&s->mem_util, 0, 100);
	n += bound(&s->mem_total, 1, (int64_t)1 << 50);
	n += bound(&s->mem_used, 0, (int64_t)1 << 50);
	n += bound(&s->mem_free, 0, (int64_t)1 << 50);
	n += bound(&s->mem_reserved, 0, (int64_t)1 << 50);
	if (s->mem_total > 0) {
		if (s->mem_used > s->mem_total)
			n++, s->mem_used = -1;
		if (s->mem_free > s->mem_total)
			n++, s->mem_free = -1;
	}
	n += bound(&s->temp_gpu, -40, 200);
	n += bound(&s->temp_mem, -40, 200);
	n += bound(&s->power_mw, 0, 10000000);
	n += bound(&s->energy_mj, 0, counter_max);
	n += bound(&s->sm_mhz, 0, 20000);
	n += bound(&s->mem_mhz, 0, 20000);
	n += bound(&s->reasons, 0, (int64_t)CW_GPU_REASON_KNOWN);
	n += bound(&s->ecc_sbe, 0, counter_max);
	n += bound(&s->ecc_dbe, 0, counter_max);
	n += bound(&s->pcie_replay, 0, counter_max);
	n += bound(&s->retired_sbe, 0, 1 << 20);
	n += bound(&s->retired_dbe, 0, 1 << 20);
	n += bound(&s->remap_corr, 0, 1 << 20);
	n += bound(&s->remap_unc, 0, 1 << 20);
	n += bound(&s->remap_pending, 0, 1);
	n += bound(&s->remap_failure, 0, 1);
	n += bound(&s->nvlink_errors, 0, counter_max);
	return n;
}

void cw_gpu_reasons_text(int64_t reasons, char *buf, unsigned len)
{
	static const char *const names[] = {
		"idle", "app_clocks", "sw_power_cap", "hw_slowdown", "sync_boost",
		"sw_thermal", "hw_thermal", "hw_power_brake", "display_clock",
	};
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	if (reasons <= 0)
		return;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int w;
		if (!(reasons & (1LL << i)))
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", names[i]);
		if (w < 0 || (size_t)w >= len - used)
			return;
		used += (size_t)w;
	}
}
