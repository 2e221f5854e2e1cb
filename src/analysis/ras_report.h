/* nccl_hang's NCCL RAS answer in the reports (ras_report.c). */
#ifndef CW_ANALYSIS_RAS_REPORT_H
#define CW_ANALYSIS_RAS_REPORT_H

#include <jansson.h>
#include <stddef.h>

#include "analysis/chain.h"

/* The stored answer ({"status": "answered"|"text_only"|"unverified"|
 * "no_answer"|"bad_reply", ...}), or {"status": "not_asked"} when trace
 * stored none. */
json_t *cw_chain_ras_json(const struct cw_chain *c);
/* One line: "answered (NCCL 2.29.1, 1 communicator); communicator 0x...
 * of 4 ranks: most at 10 collectives, behind: rank 3 (pid ...) at 9
 * collectives", "answered, truncated at 1 MiB (...)", "answered by a
 * listener not of the traced job, unverified (...): it claims ...",
 * "did not answer (...)", "not asked (...)". */
void cw_chain_ras_text(const struct cw_chain *c, char *buf, size_t len);

/* d (an answer's JSON) written compactly into buf (len bytes): when it is
 * longer, its listed ranks and then communicators are cut from the end
 * until it fits ("listed_cut": true); never dropped. Returns 0, or -ENOSPC
 * when not even its status fits (buf ""). */
int cw_ras_fit(json_t *d, char *buf, size_t len);

#endif
