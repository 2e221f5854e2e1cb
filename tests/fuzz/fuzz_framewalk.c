/* Fuzzes the frame walker and object readers over an arbitrary memory
 * image: the input (up to 64 KiB) is the target's memory at 0x100000, with
 * _PyRuntime at its start. The first byte picks the layout (3.10, 3.11,
 * 3.12, or 3.13 through _Py_DebugOffsets read from the image). Threads are
 * listed, every frame walked, every code object read and its line decoded,
 * as `causeway where` does on a live process. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyframe/framewalk.h"
#include "pyframe/linetable.h"
#include "pyframe/pycode.h"

#define BASE 0x100000ull

static const uint8_t *img;
static size_t img_len;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > img_len || len > img_len - (addr - BASE))
		return -14; /* EFAULT */
	memcpy(buf, img + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cw_py_thread th[16];
	static struct cw_py_frame fr[CW_PY_WALK_MAX];
	struct cw_py_proc p;
	int nt, i, k;

	if (size < 2 || size > 65536)
		return 0;
	memset(&p, 0, sizeof(p));
	p.mem.read = fake_read;
	p.runtime = BASE;
	p.pthread_tid_off = data[0] & 0x80 ? 0x10 : -1;
	img = data + 1;
	img_len = size - 1;
	if ((data[0] & 3) == 3) {
		uint32_t hex;

		if (cw_py_offsets_debug(&p.mem, BASE, 0, &p.off, &hex, NULL, 0))
			return 0;
	} else if (cw_py_offsets_builtin(10 + (data[0] & 3), &p.off)) {
		return 0;
	}
	(void)cw_py_proc_validate(&p);
	nt = cw_py_threads(&p, th, 16);
	for (i = 0; i < nt; i++) {
		int trunc, n = cw_py_walk(&p, th[i].frame, fr, CW_PY_WALK_MAX, &trunc);

		for (k = 0; k < n; k++) {
			struct cw_py_code c;

			if (cw_py_code_read(&p, fr[k].code, &c))
				continue;
			(void)cw_linetable_line(p.off.minor, c.linetable, c.linetable_len, c.fp.firstlineno,
						fr[k].lasti == UINT32_MAX ? -1 : fr[k].lasti);
			cw_py_code_release(&c);
		}
	}
	return 0;
}
