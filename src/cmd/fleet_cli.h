/* Fleet flags shared by query and explain (and export): one small block in
 * each command hands over to these when a fan-out is asked for.
 *
 *   --nodes HOST:PORT,...   ask these agents
 *   --fleet                 ask the config's fleet.nodes
 *   --ca-cert FILE          CA (or pinned self-signed cert) for the agents
 *   --client-cert FILE, --client-key FILE   mutual TLS
 *   --token-file FILE       bearer token (else $CW_TOKEN, else fleet.token_file)
 *   --node-timeout DUR      per-node deadline (default 2s, or fleet.timeout)
 *   --skew-warn DUR         warn when a clock is off by more (default 50ms) */
#ifndef CW_CMD_FLEET_CLI_H
#define CW_CMD_FLEET_CLI_H

#include "fleet/fanout.h"
#include "store/ro_query.h"

/* 1 when argv holds a fleet flag, so the command should fan out. */
int cw_fleet_cli_wanted(int argc, char **argv);

/* Removes the fleet flags from argv (compacting it, *argc updated) and
 * fills o from them, the environment and the config. Returns 0, or a
 * CW_EXIT_* code after printing the error once. */
int cw_fleet_cli_extract(int *argc, char **argv, int json, struct cw_fleet_opts *o);
void cw_fleet_cli_release(struct cw_fleet_opts *o);

/* Row printer of the calling command: fmt 0 text, 1 JSON, 2 CSV. */
typedef int (*cw_fleet_rows_printer)(const struct cw_ro_result *r, int fmt);

/* `query --nodes ...`: SQL (or, without SQL, the per-op summary) on every
 * agent, printed through print. Returns a CW_EXIT_* code. */
int cw_fleet_cmd_query(int argc, char **argv, cw_fleet_rows_printer print);
/* `explain --nodes ...`: chains from every agent, labelled and sorted by
 * severity, printed with explain's own text report or as JSON. */
int cw_fleet_cmd_explain(int argc, char **argv);

#endif
