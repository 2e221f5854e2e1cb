/* The two interfaces the pipeline resolves frames through: Python code
 * objects to source locations (src/pyframe, or the demo's synthetic code)
 * and native return addresses to symbol lines (src/symbol). They live here,
 * below the pipeline, so that the resolvers need not include it. */
#ifndef CW_SYMBOL_FRAMES_H
#define CW_SYMBOL_FRAMES_H

#include <stddef.h>
#include <stdint.h>

/* A resolved Python frame. */
struct cw_py_location {
	char file[256];
	char function[128];
	int line; /* the executing line, 0 unknown */
};

/* Resolves one captured frame (code object address + instruction offset in
 * code units) of process pid to its source location. Live tracing reads the
 * target's memory (src/pyframe); the demo registers synthetic code objects.
 * Returns 0, or -errno when the frame cannot be resolved. */
struct cw_pystack;
struct cw_py_resolver {
	int (*resolve)(void *ctx, uint32_t pid, uint64_t code, uint32_t lasti, struct cw_py_location *out);
	/* For a call made on thread tid, which has no Python frames: the
	 * stack of the Python thread waiting on it (src/pyframe/attribute.h)
	 * into out->frames/nframes/truncated, its TID into *via. Returns the
	 * frame count, 0 when nothing is attributed, or -errno. May be NULL. */
	int (*attribute)(void *ctx, uint32_t pid, uint32_t tid, struct cw_pystack *out, uint32_t *via);
	void *ctx;
};

/* Turns a native stack of process pid into one symbolized line per frame
 * ("libfoo.so!bar+0x12"): ips as captured (the first the call's own
 * address, the others return addresses), each line a name or the raw
 * address, into lines[i * linelen]. Returns 0, or -errno with nothing
 * written (the caller writes raw addresses). */
struct cw_symbolizer {
	int (*symbolize_stack)(void *ctx, uint32_t pid, const uint64_t *ips, uint32_t n, char *lines, size_t linelen);
	void *ctx;
};

#endif
