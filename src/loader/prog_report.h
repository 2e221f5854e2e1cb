/* prog_report: the programs of a loaded BPF object, by name, each loaded
 * or deliberately left out (autoload off), with what the verifier spent
 * on it. For `check` (which loads what trace would) and trace --verbose. */
#ifndef CW_LOADER_PROG_REPORT_H
#define CW_LOADER_PROG_REPORT_H

#include <stdint.h>

struct bpf_object;

struct cw_prog_report {
	const char *name;        /* the program's name in the object */
	int loaded;              /* 0: left out on this kernel */
	uint32_t verified_insns; /* instructions the verifier processed (5.16+; 0 unknown) */
};

typedef void (*cw_prog_report_fn)(void *ctx, const struct cw_prog_report *r);

/* Calls fn once per program of obj, in object order. Returns the count. */
int cw_prog_report(struct bpf_object *obj, cw_prog_report_fn fn, void *ctx);

#endif
