#include "cmd/cmd.h"
#include "util/log.h"

int cmd_export(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("export: not built yet");
	return CW_EXIT_FAIL;
}
