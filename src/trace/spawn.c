/* The command a trace launches: forked at start, held before exec until
 * its probes are attached. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "trace/session.h"

/* Forks the command stopped before exec: it waits on a pipe (t->gate_fd,
 * the write end) until the probes are attached and its pid is tracked.
 * Returns 0 or -errno. */
int trace_spawn_command(struct trace *t)
{
	char **cmd = t->o.command;
	pid_t parent = getpid(), pid;
	sigset_t stop, old;
	int p[2], err;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	/* trace's SIGINT/SIGTERM handlers are installed by now: the child must
	 * not run them (a SIGTERM of the stop, caught between the gate and
	 * exec, was lost and the command ran on). Blocked across the fork, set
	 * back to their defaults in the child, then let through. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	pid = fork();
	if (pid != 0) {
		err = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		errno = err;
	}
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		char c;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);

		close(p[1]);
		/* The death signal survives exec (not of a set-user-ID, set-group-ID
		 * or file-capability binary, which clears it). It fires when the
		 * thread that forked dies: this is the main thread, which lives as
		 * long as trace. trace may have died between fork and prctl, and
		 * then no signal comes: the child has been reparented already. */
		if (t->o.kill_on_exit &&
		    (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent))
			_exit(126);
		if (read(p[0], &c, 1) != 1)
			_exit(126);
		execvp(cmd[0], cmd);
		cw_trace_say(&t->o.say, "causeway: cannot run \"%s\": %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	t->child = pid;
	t->gate_fd = p[1];
	return 0;
}
