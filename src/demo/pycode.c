/* The demo's Python code registry: synthetic code objects of a PyTorch
 * training script (and, for gpu-steal, of an inference server), each at a
 * fixed address with a line table, and the call sites whose frame chains
 * the generator puts in CW_REC_PYSTACK records.
 *
 * The line table mimics what CPython 3.11+ keeps in co_linetable: runs of
 * instructions (in 2-byte code units) that belong to one source line. The
 * generator writes, for each frame, an instruction offset inside the run
 * of the executing line; the resolver maps it back through the table, the
 * same question src/pyframe answers for a live process. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "demo/gen.h"

#define SITE_PKG "/opt/conda/lib/python3.12/site-packages/torch"

struct demo_code {
	uint64_t addr;
	const char *file, *function;
	int firstlineno;
	int lines[8]; /* executing lines in instruction order; 0 ends */
};

enum {
	C_MODULE,   /* train.py <module> */
	C_MAIN,     /* train.py main */
	C_STEP,     /* train.py train_step */
	C_FORWARD,  /* model.py Net.forward */
	C_NEXT,     /* data.py CUDAPrefetcher.__next__ */
	C_CALL,     /* torch nn.Module._call_impl */
	C_LINEAR,   /* torch nn.Linear.forward */
	C_BACKWARD, /* torch Tensor.backward */
	C_ENGINE,   /* torch autograd _engine_run_backward */
	C_ADAMW,    /* torch optim _multi_tensor_adamw */
	C_TO,       /* torch nn.Module.to */
	C_SERVE_MOD,
	C_SERVE_INFER,
	C_MAX
};

static const struct demo_code codes[C_MAX] = {
	[C_MODULE] = { 0x7f3a1c2e0030, "/workspace/train.py", "<module>", 1, { 12, 231 } },
	[C_MAIN] = { 0x7f3a1c2e1a70, "/workspace/train.py", "main", 170, { 176, 184, 199, 203, 210 } },
	[C_STEP] = { 0x7f3a1c2e2f10, "/workspace/train.py", "train_step", 80, { 84, 86, 88, 90, 92, 95 } },
	[C_FORWARD] = { 0x7f3a1c4b0b30, "/workspace/model.py", "forward", 130, { 138, 142, 147, 151 } },
	[C_NEXT] = { 0x7f3a1c4c3e50, "/workspace/data.py", "__next__", 44, { 48, 51, 56 } },
	[C_CALL] = { 0x7f3a1d8a4cf0, SITE_PKG "/nn/modules/module.py", "_call_impl", 1740, { 1747, 1750 } },
	[C_LINEAR] = { 0x7f3a1d8c1f90, SITE_PKG "/nn/modules/linear.py", "forward", 124, { 125 } },
	[C_BACKWARD] = { 0x7f3a1d6f2a10, SITE_PKG "/_tensor.py", "backward", 570, { 581, 626 } },
	[C_ENGINE] = { 0x7f3a1d7b3c50, SITE_PKG "/autograd/graph.py", "_engine_run_backward", 815, { 825 } },
	[C_ADAMW] = { 0x7f3a1d9d0e70, SITE_PKG "/optim/adamw.py", "_multi_tensor_adamw", 480, { 520, 548 } },
	[C_TO] = { 0x7f3a1d8a1b30, SITE_PKG "/nn/modules/module.py", "to", 1299, { 1343 } },
	[C_SERVE_MOD] = { 0x7f52a0e10030, "/srv/infer/serve.py", "<module>", 1, { 102 } },
	[C_SERVE_INFER] = { 0x7f52a0e12b70, "/srv/infer/serve.py", "infer", 70, { 74, 77 } },
};

/* Instruction run length (code units) of the i-th line of a code object:
 * uneven on purpose, so a wrong offset lands on a wrong line. */
static uint32_t run_len(int i)
{
	return 3 + (uint32_t)(i * 7 % 5) * 2;
}

static int code_index(uint64_t addr)
{
	for (int i = 0; i < C_MAX; i++)
		if (codes[i].addr == addr)
			return i;
	return -1;
}

/* The instruction offset that executes line in code c, -1 if none. */
static int64_t lasti_of(int c, int line)
{
	uint32_t off = 0;

	for (int i = 0; i < 8 && codes[c].lines[i]; i++) {
		if (codes[c].lines[i] == line)
			return off + run_len(i) / 2;
		off += run_len(i);
	}
	return -1;
}

static int resolve(void *ctx, uint32_t pid, uint64_t code, uint32_t lasti, struct cw_py_location *out)
{
	uint32_t off = 0;
	int c = code_index(code);

	(void)ctx;
	(void)pid;
	if (c < 0)
		return -ENOENT;
	for (int i = 0; i < 8 && codes[c].lines[i]; i++) {
		if (lasti < off + run_len(i)) {
			snprintf(out->file, sizeof(out->file), "%s", codes[c].file);
			snprintf(out->function, sizeof(out->function), "%s", codes[c].function);
			out->line = codes[c].lines[i];
			return 0;
		}
		off += run_len(i);
	}
	/* Past the end of the code object: a corrupt capture. */
	return -ERANGE;
}

const struct cw_py_resolver cw_demo_py_resolver = { .resolve = resolve, .ctx = NULL };

struct frame_ref {
	int code, line;
};

/* Innermost first, as the BPF frame walker captures them. */
static const struct frame_ref sites[CW_SITE_MAX][8] = {
	[CW_SITE_INIT_ALLOC] = { { C_TO, 1343 }, { C_MAIN, 176 }, { C_MODULE, 231 } },
	[CW_SITE_COPY] = { { C_NEXT, 51 }, { C_MAIN, 199 }, { C_MODULE, 231 } },
	[CW_SITE_PIN] = { { C_NEXT, 48 }, { C_MAIN, 199 }, { C_MODULE, 231 } },
	[CW_SITE_FWD_CONV] = { { C_CALL, 1750 }, { C_FORWARD, 138 }, { C_CALL, 1750 }, { C_STEP, 86 },
			       { C_MAIN, 203 }, { C_MODULE, 231 } },
	[CW_SITE_FWD_ATTN] = { { C_LINEAR, 125 }, { C_CALL, 1750 }, { C_FORWARD, 142 }, { C_CALL, 1750 },
			       { C_STEP, 86 }, { C_MAIN, 203 }, { C_MODULE, 231 } },
	[CW_SITE_FWD_MLP] = { { C_LINEAR, 125 }, { C_CALL, 1750 }, { C_FORWARD, 147 }, { C_CALL, 1750 },
			      { C_STEP, 86 }, { C_MAIN, 203 }, { C_MODULE, 231 } },
	[CW_SITE_ALLOC] = { { C_FORWARD, 151 }, { C_CALL, 1750 }, { C_STEP, 86 }, { C_MAIN, 203 },
			    { C_MODULE, 231 } },
	[CW_SITE_LOSS] = { { C_STEP, 88 }, { C_MAIN, 203 }, { C_MODULE, 231 } },
	[CW_SITE_BWD] = { { C_ENGINE, 825 }, { C_BACKWARD, 581 }, { C_STEP, 90 }, { C_MAIN, 203 },
			  { C_MODULE, 231 } },
	[CW_SITE_OPT] = { { C_ADAMW, 520 }, { C_STEP, 92 }, { C_MAIN, 203 }, { C_MODULE, 231 } },
	[CW_SITE_FREE] = { { C_STEP, 95 }, { C_MAIN, 203 }, { C_MODULE, 231 } },
	[CW_SITE_SYNC] = { { C_STEP, 95 }, { C_MAIN, 203 }, { C_MODULE, 231 } },
	[CW_SITE_SERVE_LAUNCH] = { { C_SERVE_INFER, 74 }, { C_SERVE_MOD, 102 } },
	[CW_SITE_SERVE_SYNC] = { { C_SERVE_INFER, 77 }, { C_SERVE_MOD, 102 } },
};

uint32_t cw_demo_site_frames(int site, struct cw_py_frame *frames, uint32_t max)
{
	uint32_t n = 0;

	if (site <= CW_SITE_NONE || site >= CW_SITE_MAX)
		return 0;
	for (int i = 0; i < 8 && n < max; i++) {
		const struct frame_ref *f = &sites[site][i];
		int64_t lasti;

		if (!f->line)
			break;
		lasti = lasti_of(f->code, f->line);
		if (lasti < 0)
			continue;
		frames[n].code = codes[f->code].addr;
		frames[n].lasti = (uint32_t)lasti;
		frames[n].pad = 0;
		n++;
	}
	return n;
}
