#include "trace/python.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pyframe/pystack_loader.h"
#include "pyframe/resolver.h"
#include "symbol/symworker.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_CANDIDATES 256
#define MAX_EXITED 256
/* A process is tried from enrollment (or its last exec) on: every 10 ms at
 * first, because CPython initializes its runtime a few ms after exec and a
 * short script's CUDA calls can all fall in its first 100 ms; then every
 * 100 ms, then every second, and given up after this. A call made before
 * its thread is registered has no Python stack. */
#define FIRST_RETRY_NS (10ULL * 1000000)
#define FIRST_WINDOW_NS (500ULL * 1000000)
#define FAST_RETRY_NS (100ULL * 1000000)
#define FAST_WINDOW_NS (3ULL * NSEC_PER_SEC)
#define SLOW_RETRY_NS (1ULL * NSEC_PER_SEC)
#define GIVE_UP_NS (20ULL * NSEC_PER_SEC)
/* Threads created after a refresh have no stack until the next one. A
 * process registered less than YOUNG_NS ago is refreshed every
 * FIRST_RETRY_NS: its main thread may not have run Python code yet, and its
 * first worker threads start now. */
#define REFRESH_NS (100ULL * 1000000)
#define YOUNG_NS (1ULL * NSEC_PER_SEC)
#define MAX_YOUNG 64
/* How long the ring thread waits for a native stack's names: a file the
 * traced process serves (FUSE) may never answer (symbol/symworker.h). A
 * large library's first index takes part of a second: that is waited for,
 * as it was on the ring thread. */
#define SYMBOLIZE_DEADLINE_NS (2ULL * NSEC_PER_SEC)
/* Records of an exited process can still sit in another ring when its exit
 * record is read: keep its code objects a while. */
#define FORGET_GRACE_NS (2ULL * NSEC_PER_SEC)

struct candidate {
	uint32_t pid;
	uint64_t since_ns, next_ns; /* 0: not timed yet (set by the first poll) */
	int err;                    /* the last attempt's error */
	char why[160];
};

struct exited {
	uint32_t pid;
	uint64_t at_ns;
};

struct young {
	uint32_t pid;
	uint64_t since_ns;
};

struct trace_python {
	struct cw_consumer *cons;
	struct cw_pystack_loader *ld; /* NULL when capture is off */
	struct cw_pyres *res;
	struct cw_symworker *symw; /* native stacks, named off the ring thread */
	struct cw_py_resolver py;
	struct cw_symbolizer sym;
	int json;
	const struct cw_trace_sink *say; /* the capture lines */
	/* Under the consumer lock. */
	struct candidate cand[MAX_CANDIDATES];
	int ncand;
	struct exited gone[MAX_EXITED];
	int ngone;
	uint64_t cand_lost;
	int wake_fd; /* eventfd: an enrollment wakes the main loop's wait */
	/* Main thread only. */
	struct young young[MAX_YOUNG];
	int nyoung;
	uint64_t last_refresh_ns;
	struct trace_python_stats st;
};

/* Loader: pid's interpreter is initialized and its stacks are about to be
 * captured. The resolver may have failed to read it a moment ago (a call
 * without a stack, attributed before the interpreter started) and would
 * refuse its stacks for a second: it tries again instead. */
static void resolver_retry(void *ctx, pid_t pid)
{
	struct trace_python *tp = ctx;

	cw_consumer_lock(tp->cons);
	cw_pyres_retry(tp->res, (uint32_t)pid);
	cw_consumer_unlock(tp->cons);
}

int trace_python_new(struct trace_python **out, struct cw_cuda_probes *cp, struct cw_consumer *cons,
		     int py_stacks, int json, const struct cw_trace_sink *say)
{
	struct trace_python *tp = calloc(1, sizeof(*tp));
	int pfd = -1, tfd = -1, rc;

	*out = NULL;
	if (!tp)
		return -ENOMEM;
	tp->cons = cons;
	tp->json = json;
	tp->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (tp->wake_fd < 0) {
		rc = -errno;
		goto fail;
	}
	tp->say = say;
	if ((rc = cw_pyres_new(&tp->res)) || (rc = cw_symworker_new(&tp->symw, SYMBOLIZE_DEADLINE_NS)))
		goto fail;
	cw_pyres_as_resolver(tp->res, &tp->py);
	cw_symworker_as_symbolizer(tp->symw, &tp->sym);
	if (py_stacks) {
		if ((rc = cw_cuda_probes_pystack_fds(cp, &pfd, &tfd)) ||
		    (rc = cw_pystack_loader_new(&tp->ld, pfd, tfd)))
			goto fail;
		cw_pystack_loader_on_attached(tp->ld, resolver_retry, tp);
	}
	*out = tp;
	return 0;
fail:
	trace_python_free(tp);
	return rc < 0 ? rc : -EINVAL;
}

void trace_python_free(struct trace_python *tp)
{
	if (!tp)
		return;
	cw_pystack_loader_free(tp->ld);
	if (tp->wake_fd >= 0)
		close(tp->wake_fd);
	cw_pyres_free(tp->res);
	cw_symworker_free(tp->symw);
	free(tp);
}

const struct cw_py_resolver *trace_python_resolver(struct trace_python *tp)
{
	return &tp->py;
}

const struct cw_symbolizer *trace_python_symbolizer(struct trace_python *tp)
{
	return &tp->sym;
}

void trace_python_enroll(struct trace_python *tp, uint32_t pid)
{
	int i;

	if (!tp->ld || !pid)
		return;
	for (i = 0; i < tp->ncand; i++)
		if (tp->cand[i].pid == pid) {
			tp->cand[i].since_ns = tp->cand[i].next_ns = 0; /* an exec: start over */
			return;
		}
	if (tp->ncand >= MAX_CANDIDATES) {
		tp->cand_lost++;
		return;
	}
	memset(&tp->cand[tp->ncand], 0, sizeof(tp->cand[0]));
	tp->cand[tp->ncand++].pid = pid;
	trace_python_wake(tp);
}

void trace_python_wake(struct trace_python *tp)
{
	uint64_t one = 1;

	if (tp->wake_fd >= 0 && write(tp->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: already signalled past the counter's limit; a wake is pending */
	}
}

int trace_python_wake_fd(struct trace_python *tp)
{
	return tp->ld ? tp->wake_fd : -1;
}

static void drop_candidate(struct trace_python *tp, uint32_t pid)
{
	int i;

	for (i = 0; i < tp->ncand; i++)
		if (tp->cand[i].pid == pid) {
			tp->cand[i] = tp->cand[--tp->ncand];
			return;
		}
}

void trace_python_exited(struct trace_python *tp, uint32_t pid)
{
	drop_candidate(tp, pid);
	if (tp->ngone < MAX_EXITED) {
		tp->gone[tp->ngone].pid = pid;
		tp->gone[tp->ngone++].at_ns = cw_monotonic_ns();
	}
}

void trace_python_forget_exited(struct trace_python *tp, uint64_t now_ns)
{
	int i = 0;

	while (i < tp->ngone) {
		if (now_ns - tp->gone[i].at_ns < FORGET_GRACE_NS) {
			i++;
			continue;
		}
		cw_pyres_forget(tp->res, tp->gone[i].pid);
		cw_symworker_forget(tp->symw, tp->gone[i].pid);
		tp->gone[i] = tp->gone[--tp->ngone];
	}
}

/* stdout carries NDJSON events only under --json: the counters say it. */
__attribute__((format(printf, 3, 4))) static void report(struct trace_python *tp, uint32_t pid, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	if (tp->json)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	cw_trace_say(tp->say, "causeway: pid %u: %s\n", pid, text);
}

/* One attempt at pid; returns 1 when it is settled (attached, or given up). */
static int try_add(struct trace_python *tp, struct candidate *c, uint64_t now)
{
	int rc;

	/* First attempt since enrollment or an exec: a process image seen
	 * before (a python that exec'd another python) must not keep the old
	 * image's offsets. */
	if (c->since_ns == now)
		cw_pystack_loader_remove(tp->ld, (pid_t)c->pid);
	rc = cw_pystack_loader_add(tp->ld, (pid_t)c->pid, c->why, sizeof(c->why));
	if (!rc) {
		tp->st.attached++;
		if (tp->nyoung < MAX_YOUNG)
			tp->young[tp->nyoung++] = (struct young){ .pid = c->pid, .since_ns = now };
		report(tp, c->pid, "capturing Python stacks");
		return 1;
	}
	c->err = rc;
	if (now - c->since_ns >= GIVE_UP_NS) {
		/* Not Python at all is the common, silent case. */
		if (rc != -ENOENT) {
			tp->st.unsupported++;
			report(tp, c->pid, "no Python stacks: %s", c->why[0] ? c->why : strerror(-rc));
		}
		return 1;
	}
	c->next_ns = now + (now - c->since_ns < FIRST_WINDOW_NS ? FIRST_RETRY_NS
			    : now - c->since_ns < FAST_WINDOW_NS ? FAST_RETRY_NS
								  : SLOW_RETRY_NS);
	return 0;
}

/* Young processes: their thread lists again, until they are YOUNG_NS old
 * (the every-REFRESH_NS pass covers every process after that). */
static void refresh_young(struct trace_python *tp, uint64_t now)
{
	char why[160];
	int i = 0;

	while (i < tp->nyoung) {
		if (now - tp->young[i].since_ns >= YOUNG_NS ||
		    cw_pystack_loader_add(tp->ld, (pid_t)tp->young[i].pid, why, sizeof(why))) {
			tp->young[i] = tp->young[--tp->nyoung];
			continue;
		}
		i++;
	}
}

void trace_python_poll(struct trace_python *tp, uint64_t now_ns)
{
	struct candidate work[MAX_CANDIDATES];
	uint32_t settled[MAX_CANDIDATES];
	int n = 0, nsettled = 0, i, j;

	if (!tp->ld)
		return;
	cw_consumer_lock(tp->cons);
	for (i = 0; i < tp->ncand; i++) {
		struct candidate *c = &tp->cand[i];

		if (!c->since_ns)
			c->since_ns = c->next_ns = now_ns;
		if (c->next_ns <= now_ns)
			work[n++] = *c;
	}
	cw_consumer_unlock(tp->cons);
	/* Reading the targets' memory takes a while: without the lock. */
	for (i = 0; i < n; i++)
		if (try_add(tp, &work[i], now_ns))
			settled[nsettled++] = work[i].pid;
	cw_consumer_lock(tp->cons);
	for (i = 0; i < n; i++)
		for (j = 0; j < tp->ncand; j++)
			if (tp->cand[j].pid == work[i].pid && tp->cand[j].since_ns == work[i].since_ns) {
				tp->cand[j] = work[i]; /* keep an exec seen meanwhile (since 0) */
				break;
			}
	for (i = 0; i < nsettled; i++)
		for (j = 0; j < tp->ncand; j++)
			if (tp->cand[j].pid == settled[i] && tp->cand[j].since_ns) {
				tp->cand[j] = tp->cand[--tp->ncand];
				break;
			}
	cw_consumer_unlock(tp->cons);
	refresh_young(tp, now_ns);
	if (now_ns - tp->last_refresh_ns >= REFRESH_NS) {
		int nt = cw_pystack_loader_refresh(tp->ld);

		tp->last_refresh_ns = now_ns;
		if (nt >= 0)
			tp->st.threads = (uint64_t)nt;
	}
}

uint64_t trace_python_wait_ns(struct trace_python *tp, uint64_t now_ns, uint64_t longest_ns)
{
	uint64_t due = now_ns + longest_ns;
	int i;

	if (!tp->ld)
		return longest_ns;
	if (tp->nyoung)
		due = now_ns + FIRST_RETRY_NS < due ? now_ns + FIRST_RETRY_NS : due;
	cw_consumer_lock(tp->cons);
	for (i = 0; i < tp->ncand; i++) {
		uint64_t next = tp->cand[i].since_ns ? tp->cand[i].next_ns : now_ns;

		if (next < due)
			due = next;
	}
	cw_consumer_unlock(tp->cons);
	return due > now_ns ? due - now_ns : 0;
}

void trace_python_get_stats(struct trace_python *tp, struct trace_python_stats *out)
{
	struct cw_symworker_stats ss;

	cw_symworker_get_stats(tp->symw, &ss);
	tp->st.native_stalled = ss.stalled;
	tp->st.native_skipped = ss.skipped;
	*out = tp->st;
}
