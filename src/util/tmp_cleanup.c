#define _GNU_SOURCE
#include "util/tmp_cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

enum { SLOT_FREE, SLOT_BUSY, SLOT_ARMED };

static struct {
	atomic_int state;
	int dirfd, n;
	char names[CW_TMP_NAMES][256];
} slots[CW_TMP_SLOTS];

static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction prev[sizeof(sigs) / sizeof(sigs[0])];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	size_t k;

	for (int i = 0; i < CW_TMP_SLOTS; i++) {
		if (atomic_load(&slots[i].state) != SLOT_ARMED)
			continue;
		for (int j = 0; j < slots[i].n; j++)
			unlinkat(slots[i].dirfd, slots[i].names[j], 0);
		atomic_store(&slots[i].state, SLOT_BUSY); /* removed once; the owner frees the slot */
	}
	for (k = 0; k < sizeof(sigs) / sizeof(sigs[0]) && sigs[k] != sig; k++)
		;
	if (k < sizeof(sigs) / sizeof(sigs[0]) && (prev[k].sa_flags & SA_SIGINFO) && prev[k].sa_sigaction) {
		prev[k].sa_sigaction(sig, si, uc);
	} else if (k < sizeof(sigs) / sizeof(sigs[0]) && prev[k].sa_handler != SIG_DFL &&
		   prev[k].sa_handler != SIG_IGN) {
		prev[k].sa_handler(sig);
	} else {
		/* Blocked while this handler runs: delivered, with the default
		 * action, as it returns. */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	errno = saved;
}

static void install(void)
{
	for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
		struct sigaction sa;

		if (sigaction(sigs[k], NULL, &prev[k]) || prev[k].sa_handler == SIG_IGN)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
		sigaction(sigs[k], &sa, NULL);
	}
}

int cw_tmp_register(int dirfd, const char *const *names, int n)
{
	pthread_once(&once, install);
	for (int i = 0; i < CW_TMP_SLOTS; i++) {
		int want = SLOT_FREE;

		if (!atomic_compare_exchange_strong(&slots[i].state, &want, SLOT_BUSY))
			continue;
		slots[i].dirfd = dirfd;
		slots[i].n = n < CW_TMP_NAMES ? n : CW_TMP_NAMES;
		for (int j = 0; j < slots[i].n; j++)
			snprintf(slots[i].names[j], sizeof(slots[i].names[j]), "%s", names[j]);
		atomic_store(&slots[i].state, SLOT_ARMED);
		return i;
	}
	return -ENOSPC;
}

void cw_tmp_unregister(int slot)
{
	if (slot >= 0 && slot < CW_TMP_SLOTS)
		atomic_store(&slots[slot].state, SLOT_FREE);
}
