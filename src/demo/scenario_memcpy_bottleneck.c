/* memcpy-bottleneck: each step uploads a 64 MiB batch from pageable host
 * memory with a synchronous cudaMemcpy (the driver stages it through a
 * pinned bounce buffer at ~14 GB/s), while the kernels are short: the
 * copies take ~38 % of wall time. -> memcpy_bound. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

static void setup(struct cw_demo_train *tr)
{
	tr->cfg.copy_op = CW_OP_cudaMemcpy;
	tr->cfg.copy_bytes = 64ULL << 20;
	tr->cfg.copy_ns = 4800 * NSEC_PER_USEC;
	tr->cfg.kernel_ns = 150 * NSEC_PER_USEC;
}

const struct cw_demo_scenario cw_demo_scenario_memcpy_bottleneck = {
	"memcpy-bottleneck",
	"synchronous 64 MiB host-to-device copies from pageable memory take ~38% of wall time",
	"memcpy_bound",
	setup,
};
