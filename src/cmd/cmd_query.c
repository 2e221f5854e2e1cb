#include "cmd/cmd.h"
#include "util/log.h"

int cmd_query(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("query: not built yet");
	return CW_EXIT_FAIL;
}
