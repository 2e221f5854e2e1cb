/* What the parts of the check report share: the report being built and
 * its item function (check/report.c). */
#ifndef CW_CHECK_REPORT_INT_H
#define CW_CHECK_REPORT_INT_H

#include <jansson.h>

#include "loader/probe_features.h"

enum cw_check_status { CW_CHECK_OK, CW_CHECK_WARN, CW_CHECK_FAIL };

struct cw_check_report {
	json_t *checks, *libs, *pythons, *gpus, *features, *programs;
	int worst;
};

void cw_check_item(struct cw_check_report *r, const char *name, enum cw_check_status st, const char *fix,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "yes", "no" or "unknown". */
const char *cw_check_tri_name(enum cw_tri t);

/* check/kernel.c: one item per optional kernel feature (what trace uses
 * or does instead), then the BPF objects loaded and unloaded as trace
 * would load them, each program named loaded or left out. */
void cw_check_kernel_features(struct cw_check_report *r, int privileged);
void cw_check_load(struct cw_check_report *r);

#endif
