/* Diagnostics for commands. Library modules do not print; they return
 * -errno and leave the wording to the command at the edge, which calls
 * cw_err() once. */
#ifndef CW_UTIL_LOG_H
#define CW_UTIL_LOG_H

extern int cw_verbose;

void cw_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cw_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cw_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints {"error": msg} on stdout when json is set, "causeway: msg" on
 * stderr otherwise. */
void cw_report_error(int json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
