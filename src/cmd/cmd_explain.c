#include "cmd/cmd.h"
#include "util/log.h"

int cmd_explain(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cw_err("explain: not built yet");
	return CW_EXIT_FAIL;
}
