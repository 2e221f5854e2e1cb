/* Fuzzes the frame walker and object readers over an arbitrary memory
 * image: the input (up to 64 KiB) is the target's memory at 0x100000, with
 * _PyRuntime at its start. The first byte picks the layout (3.10, 3.11,
 * 3.12, or 3.13 through _Py_DebugOffsets read from the image). Threads are
 * listed, every frame walked, every code object read and its line decoded,
 * as `causeway where` does on a live process. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_pywalk.h"

#define BASE FUZZ_BASE

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_py_proc p;

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
	fuzz_walk_all(&p);
	return 0;
}
