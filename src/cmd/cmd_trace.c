#include "cmd/cmd.h"
#include "util/log.h"

int cmd_trace(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("trace: not built yet");
	return CW_EXIT_FAIL;
}
