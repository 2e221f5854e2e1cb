/* xid-fault: a healthy loop until t = 60 s, when the driver logs
 * "NVRM: Xid (PCI:0000:3b:00): 79, pid=4821, name=python, GPU has fallen
 * off the bus." (the board lost its PCIe link). The trainer's last CUDA
 * calls are its normal step; nothing on the host explains anything.
 * -> xid_fault, naming Xid 79, device 0 and pid 4821. */
#include "demo/demo.h"
#include "demo/gpu.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define XID_AT (60 * NSEC_PER_SEC)

static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	int err = cw_demo_gpu_write(tr, NULL);

	if (err)
		return err;
	return cw_demo_gpu_xid(tr, w, tr->t0 + XID_AT, 79, cw_demo_main_task.pid, "python",
			       "GPU has fallen off the bus.");
}

static const struct cw_demo_hooks hooks = {NULL, NULL, meta, NULL};

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_xid_fault = {
	"xid-fault",
	"the GPU falls off the bus at t = 60 s (Xid 79 naming the trainer)",
	"xid_fault",
	setup,
};
