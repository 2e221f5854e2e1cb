/* The usage errors every command's option loop ends with, worded once:
 * "CMD: option "X" needs a value", "CMD: unknown option "X"" and
 * "CMD: unexpected argument "X"", reported (text or --json) and answered
 * with CW_EXIT_USAGE. */
#ifndef CW_CMD_OPT_ERROR_H
#define CW_CMD_OPT_ERROR_H

/* getopt_long returned c (':' for a missing value with an optstring that
 * starts with ':', anything else for an unknown option); argv[optind - 1]
 * is the option. Returns CW_EXIT_USAGE. */
int cw_opt_error(int json, const char *cmd, int c, char **argv);

/* Like cw_opt_error for commands without the ':' optstring: missing says
 * which of the two it was; the message names no command and ends with a
 * pointer to `causeway CMD --help`. */
int cw_opt_error_see(int json, const char *cmd, int missing, const char *opt);

/* An operand the command does not take. Returns CW_EXIT_USAGE. */
int cw_opt_unexpected(int json, const char *cmd, const char *arg);

#endif
