/* libbpf_log: libbpf's messages go through causeway's log, never straight
 * to the user's terminal. With --verbose each line is shown as a debug
 * line; otherwise nothing is shown, and a loader that fails asks for the
 * one line that says why: the program and the verifier's or kernel's
 * reason (the last line of the verifier log before its statistics). */
#ifndef CW_LOADER_LIBBPF_LOG_H
#define CW_LOADER_LIBBPF_LOG_H

#include <stddef.h>

/* Installs the callback for the whole process. Idempotent. */
void cw_libbpf_log_init(void);

/* Forgets what earlier loads said. */
void cw_libbpf_log_reset(void);

/* Writes "program 'P': REASON" (or the last warning) to buf; "" when
 * libbpf said nothing since the last reset. Returns buf. */
const char *cw_libbpf_log_reason(char *buf, size_t len);

#endif
