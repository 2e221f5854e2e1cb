#include "cmd/cmd.h"
#include "util/log.h"

int cmd_serve(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("serve: not built yet");
	return CW_EXIT_FAIL;
}
