#include "cmd/cmd.h"
#include "util/log.h"

int cmd_check(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("check: not built yet");
	return CW_EXIT_FAIL;
}
