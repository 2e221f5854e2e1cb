#include "cmd/cmd.h"
#include "util/log.h"

int cmd_merge(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("merge: not built yet");
	return CW_EXIT_FAIL;
}
