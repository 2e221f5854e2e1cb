#include "util/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *sb, size_t cap)
{
	memset(sb, 0, sizeof(*sb));
	sb->cap = cap;
}

void strbuf_release(struct strbuf *sb)
{
	size_t cap = sb->cap;

	free(sb->buf);
	strbuf_init(sb, cap);
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	sb->overflow = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

static size_t effective_cap(const struct strbuf *sb)
{
	return sb->cap ? sb->cap : STRBUF_DEFAULT_CAP;
}

static int grow(struct strbuf *sb, size_t extra)
{
	size_t need, n;
	char *p;

	if (extra > effective_cap(sb) - sb->len) {
		sb->overflow = 1;
		return -ENOSPC;
	}
	need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return 0;
	n = sb->alloc ? sb->alloc : 64;
	while (n < need)
		n *= 2;
	p = realloc(sb->buf, n);
	if (!p)
		return -ENOMEM;
	sb->buf = p;
	sb->alloc = n;
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	int err = grow(sb, len);

	if (err)
		return err;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_adds(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, char c)
{
	return strbuf_add(sb, &c, 1);
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n, err;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	err = grow(sb, (size_t)n);
	if (err)
		return err;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return err;
}

const char *strbuf_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

char *strbuf_detach(struct strbuf *sb)
{
	char *p = sb->buf ? sb->buf : strdup("");

	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	sb->overflow = 0;
	return p;
}

void cw_copy_padded(char *dst, const char *src, size_t n)
{
	size_t len = strnlen(src, n);

	memcpy(dst, src, len);
	memset(dst + len, 0, n - len);
}
