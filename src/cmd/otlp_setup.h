/* What `trace` and `serve` share for OTLP export: the endpoint from --otlp
 * or the config's otlp.* keys, the exporter's start with a line on stderr,
 * and its stop with a summary line. */
#ifndef CW_CMD_OTLP_SETUP_H
#define CW_CMD_OTLP_SETUP_H

#include "export/otlp.h"

/* Starts exporting db when flag_url or otlp.endpoint is set (*out stays
 * NULL otherwise). live: trace's live metrics, NULL for serve. Returns 0 or
 * an exit code after one error line prefixed with who. */
int otlp_setup_start(const char *flag_url, const char *db, struct cw_live_metrics *live,
		     const char *who, int json, struct cw_otlp **out);

/* Stops (delivering what it can for up to 5 s) and prints what was sent
 * and lost unless quiet. */
void otlp_setup_stop(struct cw_otlp *x, const char *who, int quiet);

#endif
