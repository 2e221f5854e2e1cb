#include "loader/libbpf_log.h"

#include <bpf/libbpf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last_prog[64];    /* from "prog 'NAME': ..." */
static char last_reason[256]; /* the verifier's last word, or a warning */
static char prev_line[256];   /* the line before, while a log streams */
static int in_log;            /* inside BEGIN/END PROG LOAD LOG */

static void keep(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* libbpf prints a failed load as "prog 'X': BPF program load failed: E",
 * then the verifier's log between "-- BEGIN PROG LOAD LOG --" and
 * "-- END PROG LOAD LOG --", whose last line is its statistics
 * ("processed N insns ...") and the one before it the reason. */
static void note(const char *line, size_t n)
{
	const char *p;

	if (strstr(line, "-- BEGIN PROG LOAD LOG --")) {
		in_log = 1;
		prev_line[0] = '\0';
		return;
	}
	if (strstr(line, "-- END PROG LOAD LOG --")) {
		in_log = 0;
		if (prev_line[0])
			keep(last_reason, sizeof(last_reason), prev_line, strlen(prev_line));
		return;
	}
	if (in_log) {
		/* each verifier line may hold several: keep the non-statistics ones */
		if (strncmp(line, "processed ", 10) != 0 && strncmp(line, "verification time", 17) != 0 &&
		    strncmp(line, "stack depth", 11) != 0)
			keep(prev_line, sizeof(prev_line), line, n);
		return;
	}
	if ((p = strstr(line, "prog '"))) {
		const char *e = strchr(p + 6, '\'');

		if (e)
			keep(last_prog, sizeof(last_prog), p + 6, (size_t)(e - p - 6));
	}
	/* The first error names the cause; later ones ("failed to load
	 * object") only say the object failed with it. */
	if (!last_reason[0])
		keep(last_reason, sizeof(last_reason), line, n);
}

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char small[512], *buf = small, *line, *save = NULL;
	va_list again;
	int len;

	/* libbpf's debug level narrates every section and relocation: not
	 * even --verbose wants it. */
	if (level == LIBBPF_DEBUG)
		return 0;
	/* A verifier log comes as one message of many lines. */
	va_copy(again, ap);
	len = vsnprintf(small, sizeof(small), fmt, ap);
	if (len >= (int)sizeof(small) && (buf = malloc((size_t)len + 1)))
		vsnprintf(buf, (size_t)len + 1, fmt, again);
	else if (!buf)
		buf = small;
	va_end(again);
	pthread_mutex_lock(&mu);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t n;

		if (!strncmp(line, "libbpf: ", 8))
			line += 8;
		n = strlen(line);
		while (n && line[n - 1] == ' ')
			line[--n] = '\0';
		if (!n)
			continue;
		if (cw_verbose)
			cw_debug("libbpf: %s", line);
		note(line, n);
	}
	pthread_mutex_unlock(&mu);
	if (buf != small)
		free(buf);
	return 0;
}

void cw_libbpf_log_init(void)
{
	libbpf_set_print(print_fn);
}

void cw_libbpf_log_reset(void)
{
	pthread_mutex_lock(&mu);
	last_prog[0] = last_reason[0] = prev_line[0] = '\0';
	in_log = 0;
	pthread_mutex_unlock(&mu);
}

const char *cw_libbpf_log_reason(char *buf, size_t len)
{
	pthread_mutex_lock(&mu);
	if (!last_reason[0])
		snprintf(buf, len, "%s", "");
	else if (last_prog[0] && !strstr(last_reason, last_prog))
		snprintf(buf, len, "program '%s': %s", last_prog, last_reason);
	else
		snprintf(buf, len, "%s", last_reason);
	pthread_mutex_unlock(&mu);
	return buf;
}
