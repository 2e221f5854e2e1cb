#include "cmd/cmd.h"
#include "util/log.h"

int cmd_demo(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("demo: not built yet");
	return CW_EXIT_FAIL;
}
