/* explain --nodes: NCCL chains computed across the agents (fanout_nccl.c). */
#ifndef CW_FLEET_FANOUT_NCCL_H
#define CW_FLEET_FANOUT_NCCL_H

#include <jansson.h>

#include "fleet/fanout.h"

/* Fetches every agent's NCCL rows, runs the arrival rules over them on
 * this host's clock (fr's measured offsets) and appends the chains' JSON
 * to chains (HIGH ones first). Returns the number of chains or -errno
 * with err set; warn receives the fan-out's warnings. */
int cw_fleet_nccl_chains(const struct cw_fleet_opts *fo, const struct cw_fleet_result *fr, json_t *chains,
			 void (*warn)(void *arg, const char *msg), void *warn_arg, char *err, size_t errlen);

#endif
