#define _GNU_SOURCE
#include "util/log.h"
#include "util/term.h"
#include "util/utf8.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cw_verbose;

/* Messages name what a user or a traced process gave (a path, a comm, a
 * library's symbol): written escaped for the terminal (util/term.h). */
static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	char *msg = NULL;

	fprintf(stderr, "causeway: %s", prefix);
	if (vasprintf(&msg, fmt, ap) >= 0)
		(void)cw_term_put_lines(stderr, msg);
	free(msg);
	fputc('\n', stderr);
}

void cw_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void cw_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void cw_debug(const char *fmt, ...)
{
	va_list ap;

	if (!cw_verbose)
		return;
	va_start(ap, fmt);
	vlog("debug: ", fmt, ap);
	va_end(ap);
}

void cw_report_error(int json, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json) {
		json_t *o = json_pack("{s:o}", "error", cw_json_str(msg));
		char *s = json_dumps(o, JSON_COMPACT);

		if (s)
			puts(s);
		free(s);
		json_decref(o);
	} else {
		fputs("causeway: ", stderr);
		(void)cw_term_put_lines(stderr, msg); /* the error line */
		fputc('\n', stderr);
	}
}
