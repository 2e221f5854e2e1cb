/* Turning captured stacks into interned rows: Python frames are resolved
 * to (file, line, function) and native addresses to symbols, hashed, and
 * stored once in py_stacks / stacks. */
#ifndef CW_PIPELINE_PYSTACK_H
#define CW_PIPELINE_PYSTACK_H

#include <stdint.h>

#include "bpf/events.h"
#include "pipeline/pipeline.h"

/* Returns the py_stacks id (> 0), 0 when nothing could be resolved, or
 * -errno. Frames the resolver cannot name are counted in *unresolved. */
int64_t cw_pystack_intern(struct cw_writer *w, const struct cw_py_resolver *py, const struct cw_pystack *s,
			  uint64_t *unresolved);

/* The same for a stack attributed to the call of a thread without Python
 * frames: via is the TID of the Python thread it was taken from. The row
 * is its own (the hash covers via) and its frames end with
 * {"python_via": via}, as a truncated stack's end with {"truncated": true}. */
int64_t cw_pystack_intern_via(struct cw_writer *w, const struct cw_py_resolver *py, const struct cw_pystack *s,
			      uint32_t via, uint64_t *unresolved);

/* Returns the stacks id (> 0), 0 for an empty stack, or -errno. */
int64_t cw_ustack_intern(struct cw_writer *w, const struct cw_symbolizer *sym, const struct cw_ustack *s);

#endif
