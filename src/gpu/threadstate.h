/* What every thread of a process is doing right now, from /proc: its
 * scheduler state, the system call it is blocked in and on what (the file
 * descriptor's target: a pipe, a socket, a file), the kernel wait point
 * (wchan), and its innermost Python line (the `where` machinery, read
 * without stopping the process). Used to say why a training process that
 * stopped making CUDA calls is not making them. */
#ifndef CW_GPU_THREADSTATE_H
#define CW_GPU_THREADSTATE_H

#include <stddef.h>
#include <sys/types.h>

struct cw_pyres;

#define CW_THREADSTATE_MAX 64

struct cw_thread_state {
	int tid;
	char comm[16];
	char state;        /* R S D T Z ... from /proc/PID/task/TID/stat */
	long syscall;      /* -1 none (running in user space), -2 unknown */
	char syscall_name[24];
	char target[96];   /* "pipe:[123]", "socket:[456]", a path; "" none */
	char wchan[48];    /* "" unknown */
	char wait[32];     /* classification: "pipe", "lock", "socket", "file io", "disk io", "sleep", "poll",
			      "child", "gpu driver", "runnable", "stopped", "other"; "cuda call" when
			      the caller found it inside a GPU call that has not returned */
	char python[200];  /* "train.py:42 in step", "" none */
	char in_call[48];  /* a traced GPU call it is inside (entered, not returned), "" none */
	unsigned long long in_call_ns; /* for how long */
};

/* Fills up to max threads of pid (res may be NULL: no Python lines).
 * Returns the count or -errno (-ESRCH: no such process). */
int cw_thread_states(pid_t pid, struct cw_thread_state *out, int max, struct cw_pyres *res);

/* Classifies one thread from its state, syscall number and fd target
 * (exposed for tests). */
const char *cw_thread_wait_class(char state, long syscall, const char *target);

/* A short phrase: "blocked reading a pipe (pipe:[123]) at train.py:42 in step". */
void cw_thread_state_describe(const struct cw_thread_state *t, char *buf, size_t len);

#endif
