#include "cmd/cmd.h"
#include "util/log.h"

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("version: not built yet");
	return CW_EXIT_FAIL;
}
