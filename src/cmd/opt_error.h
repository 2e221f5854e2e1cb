/* The usage errors every command's option loop ends with, worded once:
 * "CMD: option "X" needs a value", "CMD: unknown option "X"" (with "did you
 * mean" when a known option is one or two edits away) and "CMD: unexpected
 * argument "X"", reported (text or --json) and answered with CW_EXIT_USAGE.
 * cw_getopt is the one option reader of the commands: -h is --help
 * everywhere, and the option table it last read names the suggestions. */
#ifndef CW_CMD_OPT_ERROR_H
#define CW_CMD_OPT_ERROR_H

#include <getopt.h>
#include <stddef.h>

/* getopt_long with the commands' common rules: "-h" answers 'h' (the val
 * every command gives --help) even where the optstring lacks it; lo is
 * remembered for the suggestions of cw_opt_error and cw_opt_error_see. */
int cw_getopt(int argc, char **argv, const char *optstring, const struct option *lo, int *li);

/* The candidate in names[0..n) nearest to word (edit distance with
 * transpositions), or NULL when none is close enough to be a likely typo. */
const char *cw_suggest(const char *word, const char *const *names, size_t n);

/* " (did you mean \"--db\"?)" for an unknown long option opt ("--dbb" or
 * "--dbb=x") against the table cw_getopt last read, or extra names (NULL
 * ended, may be NULL); "" when nothing is close. */
const char *cw_opt_hint(const char *opt, const char *const *extra, char *buf, size_t len);

/* getopt_long returned c (':' for a missing value with an optstring that
 * starts with ':', anything else for an unknown option); argv[optind - 1]
 * is the option. Returns CW_EXIT_USAGE. */
int cw_opt_error(int json, const char *cmd, int c, char **argv);

/* An operand the command does not take. Returns CW_EXIT_USAGE. */
int cw_opt_unexpected(int json, const char *cmd, const char *arg);

#endif
