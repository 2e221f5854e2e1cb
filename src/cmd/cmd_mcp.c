#include "cmd/cmd.h"
#include "util/log.h"

int cmd_mcp(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("mcp: not built yet");
	return CW_EXIT_FAIL;
}
