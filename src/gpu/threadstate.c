/* Thread states from /proc (threadstate.h). The syscall numbers are
 * x86_64's (arch/x86/entry/syscalls/syscall_64.tbl) or arm64's (the
 * generic table); on another architecture the number is still reported,
 * unnamed. */
#define _GNU_SOURCE
#include "gpu/threadstate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyframe/framewalk.h"
#include "pyframe/resolver.h"
#include "util/readfile.h"

struct sc {
	long nr;
	const char *name;
	int fd_arg; /* argument 0 is a file descriptor */
};

#if defined(__x86_64__)
static const struct sc syscalls[] = {
	{0, "read", 1},       {1, "write", 1},     {7, "poll", 0},       {16, "ioctl", 1},
	{17, "pread64", 1},   {19, "readv", 1},    {23, "select", 0},    {35, "nanosleep", 0},
	{42, "connect", 1},   {43, "accept", 1},   {44, "sendto", 1},    {45, "recvfrom", 1},
	{46, "sendmsg", 1},   {47, "recvmsg", 1},  {61, "wait4", 0},     {202, "futex", 0},
	{230, "clock_nanosleep", 0}, {232, "epoll_wait", 1}, {247, "waitid", 0}, {270, "pselect6", 0},
	{271, "ppoll", 0},    {281, "epoll_pwait", 1}, {288, "accept4", 1}, {441, "epoll_pwait2", 1},
	{34, "pause", 0},     {74, "fsync", 1},    {75, "fdatasync", 1},
};
#elif defined(__aarch64__)
/* include/uapi/asm-generic/unistd.h: arm64 has no poll, select, pause or
 * epoll_wait; glibc calls ppoll, pselect6 and epoll_pwait instead. */
static const struct sc syscalls[] = {
	{63, "read", 1},      {64, "write", 1},    {29, "ioctl", 1},     {67, "pread64", 1},
	{65, "readv", 1},     {101, "nanosleep", 0}, {203, "connect", 1}, {202, "accept", 1},
	{206, "sendto", 1},   {207, "recvfrom", 1}, {211, "sendmsg", 1}, {212, "recvmsg", 1},
	{260, "wait4", 0},    {98, "futex", 0},    {115, "clock_nanosleep", 0}, {95, "waitid", 0},
	{72, "pselect6", 0},  {73, "ppoll", 0},    {22, "epoll_pwait", 1}, {242, "accept4", 1},
	{441, "epoll_pwait2", 1}, {82, "fsync", 1}, {83, "fdatasync", 1},
};
#else
static const struct sc syscalls[] = {{-100, "", 0}};
#endif

static const struct sc *sc_of(long nr)
{
	for (size_t i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (syscalls[i].nr == nr)
			return &syscalls[i];
	return NULL;
}

const char *cw_thread_wait_class(char state, long syscall, const char *target)
{
	const struct sc *s = syscall >= 0 ? sc_of(syscall) : NULL;

	if (state == 'T' || state == 't')
		return "stopped";
	if (state == 'Z' || state == 'X')
		return "exited";
	if (state == 'R')
		return "runnable";
	if (!s)
		return state == 'D' ? "disk io" : "other";
	if (!strcmp(s->name, "futex"))
		return "lock";
	if (!strcmp(s->name, "nanosleep") || !strcmp(s->name, "clock_nanosleep") || !strcmp(s->name, "pause"))
		return "sleep";
	if (!strcmp(s->name, "wait4") || !strcmp(s->name, "waitid"))
		return "child";
	if (!strcmp(s->name, "poll") || !strcmp(s->name, "ppoll") || !strcmp(s->name, "select") ||
	    !strcmp(s->name, "pselect6") || !strncmp(s->name, "epoll", 5))
		return "poll";
	if (s->fd_arg && target) {
		if (!strncmp(target, "pipe:", 5))
			return "pipe";
		if (!strncmp(target, "socket:", 7))
			return "socket";
		if (!strncmp(target, "/dev/nvidia", 11))
			return "gpu driver";
		if (target[0] == '/')
			return state == 'D' ? "disk io" : "file io";
	}
	return state == 'D' ? "disk io" : "other";
}

static void python_lines(pid_t pid, struct cw_thread_state *out, int n, struct cw_pyres *res)
{
	static struct cw_py_thread th[256];
	struct cw_py_frame frames[32];
	struct cw_py_proc *p;
	char why[128];
	int nth;

	if (!res || !(p = cw_pyres_proc(res, (uint32_t)pid, why, sizeof(why))))
		return;
	nth = cw_py_threads(p, th, 256);
	for (int i = 0; i < nth; i++) {
		int truncated = 0, nf;
		struct cw_py_location loc;

		if (!th[i].tid || !th[i].frame)
			continue;
		nf = cw_py_walk(p, th[i].frame, frames, 32, &truncated);
		if (nf <= 0 || cw_pyres_resolve(res, (uint32_t)pid, frames[0].code, frames[0].lasti, &loc))
			continue;
		for (int k = 0; k < n; k++)
			if (out[k].tid == (int)th[i].tid)
				snprintf(out[k].python, sizeof(out[k].python), "%.120s:%d in %.60s", loc.file, loc.line,
					 loc.function);
	}
}

int cw_thread_states(pid_t pid, struct cw_thread_state *out, int max, struct cw_pyres *res)
{
	char path[96], buf[512];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d)) && n < max) {
		struct cw_thread_state *t = &out[n];
		char *p, *q;
		long fd = -1;
		int tid = (int)strtol(de->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->syscall = -2;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, tid);
		if (cw_read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		/* "tid (comm) S ...": comm may hold spaces and parentheses. */
		p = strchr(buf, '(');
		q = strrchr(buf, ')');
		if (!p || !q || q < p || q[1] != ' ')
			continue;
		snprintf(t->comm, sizeof(t->comm), "%.*s", (int)(q - p - 1 < 15 ? q - p - 1 : 15), p + 1);
		t->state = q[2];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, tid);
		if (cw_read_small(path, buf, sizeof(buf)) > 0) {
			if (!strncmp(buf, "running", 7))
				t->syscall = -1;
			else {
				char *e;
				long nr = strtol(buf, &e, 10);
				t->syscall = nr;
				if (nr >= 0 && *e == ' ')
					fd = strtol(e + 1, NULL, 16);
			}
		}
		if (t->syscall >= 0) {
			const struct sc *s = sc_of(t->syscall);
			if (s)
				snprintf(t->syscall_name, sizeof(t->syscall_name), "%s", s->name);
			if (s && s->fd_arg && fd >= 0 && fd < 1 << 20) {
				ssize_t l;
				snprintf(path, sizeof(path), "/proc/%d/fd/%ld", (int)pid, fd);
				l = readlink(path, t->target, sizeof(t->target) - 1);
				t->target[l > 0 ? l : 0] = '\0';
			}
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)pid, tid);
		if (cw_read_small(path, buf, sizeof(buf)) > 0 && strcmp(buf, "0"))
			snprintf(t->wchan, sizeof(t->wchan), "%.47s", buf);
		snprintf(t->wait, sizeof(t->wait), "%s", cw_thread_wait_class(t->state, t->syscall, t->target));
		n++;
	}
	closedir(d);
	python_lines(pid, out, n, res);
	return n;
}

void cw_thread_state_describe(const struct cw_thread_state *t, char *buf, size_t len)
{
	const char *w = t->wait;
	char what[160];

	if (t->in_call[0])
		snprintf(what, sizeof(what), "inside %s for %.1fs, not returned (%s%s%s)", t->in_call,
			 (double)t->in_call_ns / 1e9, t->state == 'R' ? "spinning" : "sleeping",
			 t->syscall_name[0] ? " in " : "", t->syscall_name);
	else if (!strcmp(w, "pipe"))
		snprintf(what, sizeof(what), "blocked in %s on a pipe (%s)", t->syscall_name, t->target);
	else if (!strcmp(w, "socket"))
		snprintf(what, sizeof(what), "blocked in %s on a socket (%s)", t->syscall_name, t->target);
	else if (!strcmp(w, "lock"))
		snprintf(what, sizeof(what), "waiting on a lock (futex)");
	else if (!strcmp(w, "file io") || !strcmp(w, "disk io"))
		snprintf(what, sizeof(what), "blocked on I/O%s%s", t->target[0] ? " to " : "", t->target);
	else if (!strcmp(w, "sleep"))
		snprintf(what, sizeof(what), "sleeping (%s)", t->syscall_name);
	else if (!strcmp(w, "poll"))
		snprintf(what, sizeof(what), "waiting in %s", t->syscall_name);
	else if (!strcmp(w, "child"))
		snprintf(what, sizeof(what), "waiting for a child process");
	else if (!strcmp(w, "gpu driver"))
		snprintf(what, sizeof(what), "inside the NVIDIA driver (%s on %s)", t->syscall_name, t->target);
	else if (!strcmp(w, "runnable"))
		snprintf(what, sizeof(what), "runnable (on a CPU or waiting for one)");
	else
		snprintf(what, sizeof(what), "state %c%s%s", t->state ? t->state : '?', t->syscall_name[0] ? " in " : "",
			 t->syscall_name);
	snprintf(buf, len, "thread %d (%s) %s%s%s%s%s", t->tid, t->comm, what, t->wchan[0] ? ", wchan " : "", t->wchan,
		 t->python[0] ? " at " : "", t->python);
}
