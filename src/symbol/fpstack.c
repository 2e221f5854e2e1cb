#define _GNU_SOURCE
#include "symbol/fpstack.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "symbol/procmaps.h"

int cw_threads_stop(pid_t pid, struct cw_stopped *s)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int i, r, stopped = 0, first_err = 0;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d)) && s->n < CW_FP_MAX_TIDS) {
		long t = strtol(de->d_name, NULL, 10);

		if (t > 0)
			s->tids[s->n++] = (pid_t)t;
	}
	closedir(d);
	for (i = 0; i < s->n; i++) {
		int status;

		if (ptrace(PTRACE_SEIZE, s->tids[i], 0, 0)) {
			if (!first_err)
				first_err = -errno;
			continue;
		}
		/* A seized thread that is not stopped cannot be detached
		 * (PTRACE_DETACH needs a ptrace-stop): one whose interrupt
		 * failed has exited, and a wait cut by a signal is waited
		 * again, so no thread stays seized after this. */
		if (ptrace(PTRACE_INTERRUPT, s->tids[i], 0, 0))
			continue;
		while ((r = waitpid(s->tids[i], &status, __WALL)) < 0 && errno == EINTR)
			;
		if (r < 0 || !WIFSTOPPED(status))
			continue; /* gone: nothing to detach */
		if (status >> 16 != PTRACE_EVENT_STOP && WSTOPSIG(status) != SIGTRAP)
			s->sig[i] = (unsigned char)WSTOPSIG(status);
		s->held[i] = 1;
		stopped++;
	}
	if (!stopped && s->n)
		return first_err ? first_err : -EPERM;
	return stopped;
}

void cw_threads_resume(struct cw_stopped *s)
{
	int i;

	for (i = 0; i < s->n; i++) {
		if (s->held[i])
			ptrace(PTRACE_DETACH, s->tids[i], 0, (void *)(uintptr_t)s->sig[i]);
		s->held[i] = 0;
		s->sig[i] = 0;
	}
}

/* Walks the frame-pointer chain from (ip, sp, fp), writing ips[0] = ip
 * and then each return address. Frame pointers must be 8-aligned,
 * strictly increase, and stay within [sp, stack_end).
 * Returns the count. */
static int cw_fp_walk(struct cw_rmem *m, uint64_t ip, uint64_t sp, uint64_t fp, uint64_t stack_end, uint64_t *ips,
		      int max)
{
	int n = 0;

	if (max <= 0)
		return 0;
	ips[n++] = ip;
	while (n < max) {
		uint64_t pair[2]; /* saved fp, return address (x86-64 SysV and AArch64 frames) */

		if ((fp & 7) || fp < sp || fp + 16 > stack_end)
			break;
		if (cw_rmem_read(m, fp, pair, sizeof(pair)))
			break;
		if (!cw_rmem_ptr_ok(pair[1]))
			break;
		ips[n++] = pair[1];
		if (pair[0] <= fp)
			break; /* chain must move up the stack: no cycles */
		fp = pair[0];
	}
	return n;
}

#if defined(__x86_64__) || defined(__aarch64__)
/* The walk from a stopped thread's (ip, sp, fp), bounded by the mapping
 * that holds sp. */
static int walk_from(pid_t pid, struct cw_rmem *m, uint64_t ip, uint64_t sp, uint64_t fp, uint64_t *ips, int max)
{
	const struct cw_map *sm;
	struct cw_map *maps;
	uint64_t end;
	int n;

	n = cw_procmaps_read(pid, &maps);
	if (n < 0)
		return n;
	sm = cw_procmaps_find(maps, n, sp);
	end = sm ? sm->end : 0;
	free(maps);
	return cw_fp_walk(m, ip, sp, fp, end, ips, max);
}
#endif

int cw_thread_native_stack(pid_t pid, pid_t tid, struct cw_rmem *m, uint64_t *ips, int max)
{
#if defined(__x86_64__)
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, tid, 0, &regs))
		return -errno;
	return walk_from(pid, m, regs.rip, regs.rsp, regs.rbp, ips, max);
#elif defined(__aarch64__)
	/* AAPCS64 frame records are the same pair: x29 points at the saved x29
	 * and the return address (x30 as saved). No PTRACE_GETREGS on arm64. */
	struct user_regs_struct regs;
	struct iovec iov = { .iov_base = &regs, .iov_len = sizeof(regs) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov))
		return -errno;
	return walk_from(pid, m, regs.pc, regs.sp, regs.regs[29], ips, max);
#else
	(void)pid; (void)tid; (void)m; (void)ips; (void)max;
	return -ENOTSUP;
#endif
}
