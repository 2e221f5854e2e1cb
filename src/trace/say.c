/* The trace session's one way to say something: its caller's sink. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace/trace.h"

static void say(void (*fn)(void *, const char *), void *ctx, const char *fmt, va_list ap)
{
	char *text;

	if (!fn || vasprintf(&text, fmt, ap) < 0)
		return;
	fn(ctx, text);
	free(text);
}

void cw_trace_say(const struct cw_trace_sink *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(s->line, s->ctx, fmt, ap);
	va_end(ap);
}

void cw_trace_fail(const struct cw_trace_sink *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(s->error, s->ctx, fmt, ap);
	va_end(ap);
}
