#include "cmd/cmd.h"
#include "util/log.h"

int cmd_where(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("where: not built yet");
	return CW_EXIT_FAIL;
}
