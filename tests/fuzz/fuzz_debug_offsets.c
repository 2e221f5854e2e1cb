/* Fuzzes _Py_DebugOffsets and what is read through it: the input's first
 * byte picks a recorded structure (none, 3.13.0, 3.14.10 or 3.15.2: the
 * bytes real interpreters ship) and whether the _PyRuntime symbol size is
 * known; the rest is the target's memory at 0x100000, with _PyRuntime at
 * its start. Over a recorded structure the input is XORed, so a zero input
 * is the real layout and mutations are wild sizes and offsets near it;
 * the memory behind is free-form (thread lists and frame chains with
 * cycles, huge counts, wild pointers). Offsets are parsed, and when
 * accepted every thread is listed, every frame walked, every code object
 * read and its line decoded, as `causeway where` does. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_pywalk.h"
#include "../unit/py_debug_offsets_recorded.h"

#define BASE FUZZ_BASE

static uint8_t image[65536];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t *rec[4] = { NULL, py313_debug_offsets, py314_debug_offsets, py315_debug_offsets };
	static const uint64_t rsize[4] = { 0, PY313_RUNTIME_SIZE, PY314_RUNTIME_SIZE, PY315_RUNTIME_SIZE };
	struct cw_py_proc p;
	char why[256];
	uint32_t hex;
	int i, sel;

	if (size < 2 || size > sizeof(image) + 1)
		return 0;
	sel = data[0] & 3;
	img_len = size - 1;
	memcpy(image, data + 1, img_len);
	img = image;
	if (rec[sel])
		for (i = 0; i < 1024 && (size_t)i < img_len; i++)
			image[i] ^= rec[sel][i];
	memset(&p, 0, sizeof(p));
	p.mem.read = fake_read;
	p.runtime = BASE;
	p.pthread_tid_off = -1;
	if (cw_py_offsets_debug(&p.mem, BASE, (data[0] & 4) ? rsize[sel] : 0, &p.off, &hex, why, sizeof(why)))
		return 0;
	fuzz_walk_all(&p);
	return 0;
}
