/* where: every thread's Python and native stack of a live process, as one
 * object (docs/where.md); `causeway where` and the MCP where tool print it. */
#ifndef CW_WHERE_WHERE_H
#define CW_WHERE_WHERE_H

#include <jansson.h>
#include <stddef.h>

/* What native stacks to add: none (the process is not paused), unwound
 * through DWARF with frame pointers as the fallback, or frame pointers
 * only. */
enum { CW_WHERE_NO_NATIVE = 0, CW_WHERE_NATIVE = 1, CW_WHERE_FP_ONLY = 2 };

/* Dumps process pid (native, above: pause it with ptrace and add native
 * stacks).
 * Returns 0 with *out set; -ENOEXEC with *out set when its Python could not
 * be read (python_error says why); or, with *out NULL and err filled,
 * -ESRCH (no such process) or -ENOMEM. */
int cw_where_collect(long pid, int native, json_t **out, char *err, size_t errlen);

#endif
