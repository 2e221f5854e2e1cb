#define _GNU_SOURCE
#include "pyframe/attribute.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

int cw_py_blocked_in_futex(uint32_t pid, uint32_t tid)
{
	char path[96], buf[64];
	FILE *f;
	long nr;
	int ok;

	/* "NR args... sp pc" while in a syscall, "running" or "-1 ..." not */
	snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return 0;
	nr = strtol(buf, NULL, 10);
	return nr == SYS_futex
#ifdef SYS_futex_waitv
	       || nr == SYS_futex_waitv
#endif
		;
}

int cw_py_waiting_thread(uint32_t pid, uint32_t caller, const struct cw_py_thread *th, int nt,
			 cw_py_blocked_fn blocked)
{
	int best = -1, i;

	for (i = 0; i < nt; i++)
		if (th[i].tid == caller && th[i].frame)
			return -2;
	for (i = 0; i < nt; i++) {
		if (!th[i].frame || !th[i].tid || th[i].tid == caller || !blocked(pid, th[i].tid))
			continue;
		if (th[i].tid == pid)
			return i;
		if (best < 0 || th[i].tid < th[best].tid)
			best = i;
	}
	return best;
}
