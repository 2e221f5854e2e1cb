#include "cmd/opt_error.h"

#include <getopt.h>

#include "cmd/cmd.h"
#include "util/log.h"

int cw_opt_error(int json, const char *cmd, int c, char **argv)
{
	const char *opt = argv[optind - 1];

	if (c == ':')
		cw_report_error(json, "%s: option \"%s\" needs a value", cmd, opt);
	else
		cw_report_error(json, "%s: unknown option \"%s\"", cmd, opt);
	return CW_EXIT_USAGE;
}

int cw_opt_error_see(int json, const char *cmd, int missing, const char *opt)
{
	if (missing)
		cw_report_error(json, "option \"%s\" needs a value; see 'causeway %s --help'", opt, cmd);
	else
		cw_report_error(json, "unknown option \"%s\"; see 'causeway %s --help'", opt, cmd);
	return CW_EXIT_USAGE;
}

int cw_opt_unexpected(int json, const char *cmd, const char *arg)
{
	cw_report_error(json, "%s: unexpected argument \"%s\"", cmd, arg);
	return CW_EXIT_USAGE;
}
