/* For the Python fuzz targets: the target's memory as one image at
 * FUZZ_BASE (img, img_len, set by the target), and what `causeway where`
 * does with a process once its offsets are known: validate, list every
 * thread, walk every frame, read every code object and decode its line. */
#ifndef CW_FUZZ_PYWALK_H
#define CW_FUZZ_PYWALK_H

#include "pyframe/framewalk.h"
#include "pyframe/linetable.h"
#include "pyframe/pycode.h"

#include <string.h>

#define FUZZ_BASE 0x100000ull

static const uint8_t *img;
static size_t img_len;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < FUZZ_BASE || addr - FUZZ_BASE > img_len || len > img_len - (addr - FUZZ_BASE))
		return -14; /* EFAULT */
	memcpy(buf, img + (addr - FUZZ_BASE), len);
	return 0;
}

static void fuzz_walk_all(struct cw_py_proc *p)
{
	static struct cw_py_thread th[16];
	static struct cw_py_frame fr[CW_PY_WALK_MAX];
	int nt, i, k;

	(void)cw_py_proc_validate(p);
	nt = cw_py_threads(p, th, 16);
	for (i = 0; i < nt; i++) {
		int trunc, n = cw_py_walk(p, th[i].frame, fr, CW_PY_WALK_MAX, &trunc);

		for (k = 0; k < n; k++) {
			struct cw_py_code c;

			if (cw_py_code_read(p, fr[k].code, &c))
				continue;
			(void)cw_linetable_line(p->off.minor, c.linetable, c.linetable_len, c.fp.firstlineno,
						fr[k].lasti == UINT32_MAX ? -1 : fr[k].lasti);
			cw_py_code_release(&c);
		}
	}
}

#endif
