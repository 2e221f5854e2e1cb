/* Reading CPython objects out of another process: str, bytes and the
 * parts of a code object that name a frame. All reads are capped; a value
 * that does not look like what it claims to be is an error, not a guess. */
#ifndef CW_PYFRAME_PYCODE_H
#define CW_PYFRAME_PYCODE_H

#include <stddef.h>
#include <stdint.h>

#include "pyframe/pyproc.h"

#define CW_PY_LINETABLE_MAX (64u * 1024u)

/* Reads a str object as UTF-8 into buf (truncated to len-1). Compact ASCII
 * and compact latin-1/UCS-2/UCS-4 strings are handled; anything else
 * (legacy, not ready) is -EINVAL. */
int cw_py_read_str(struct cw_py_proc *p, uint64_t obj, char *buf, size_t len);

/* Whether obj is a code object: its type's tp_name is "code" (the type
 * address is then remembered in p->code_type). Returns 1, 0, or -errno. */
int cw_py_is_code(struct cw_py_proc *p, uint64_t obj);

/* What identifies a code object at an address: if any of these change, the
 * address was reused for another code object. */
struct cw_py_code_fp {
	uint64_t filename, name, qualname, linetable;
	int32_t firstlineno;
};

struct cw_py_code {
	struct cw_py_code_fp fp;
	char file[256];
	char function[128]; /* co_qualname (3.11+) or co_name (3.10) */
	uint8_t *linetable; /* malloc'd copy */
	size_t linetable_len;
};

/* Reads the fingerprint only (one read of the code object's head). */
int cw_py_code_fingerprint(struct cw_py_proc *p, uint64_t code, struct cw_py_code_fp *fp);
/* Reads everything; free with cw_py_code_release. */
int cw_py_code_read(struct cw_py_proc *p, uint64_t code, struct cw_py_code *out);
void cw_py_code_release(struct cw_py_code *c);

#endif
