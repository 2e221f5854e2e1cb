/* causeway trace's exit status from a trace session's result: the failed
 * start-up step's, else the store's, else the launched command's. */
#ifndef CW_CMD_CMD_TRACE_H
#define CW_CMD_CMD_TRACE_H

#include "trace/trace.h"

int cmd_trace_exit_code(const struct cw_trace_result *r);

#endif
