/* Stored text shown on a terminal (term.h). */
#define _GNU_SOURCE
#include "util/term.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

static int is_bidi(unsigned cp)
{
	return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

size_t cw_term_char(const unsigned char *s, size_t n, int keep_nl, char esc[16])
{
	unsigned c = s[0], cp;
	size_t len;

	esc[0] = '\0';
	if (c < 0x20 || c == 0x7f) {
		if (c == '\n' && !keep_nl)
			snprintf(esc, 16, "\\n");
		else if (c == '\t')
			snprintf(esc, 16, "\\t");
		else if (c == '\r')
			snprintf(esc, 16, "\\r");
		else if (c != '\n')
			snprintf(esc, 16, "^%c", (char)(c ^ 0x40));
		return 1;
	}
	if (c < 0x80)
		return 1;
	len = cw_utf8_seq(s, n);
	if (!len) {
		/* Not UTF-8: a raw C1 byte (0x9b is a CSI on some terminals) or any other. */
		snprintf(esc, 16, "\\x%02x", c);
		return 1;
	}
	cp = len == 2 ? ((c & 0x1fu) << 6) | (s[1] & 0x3fu)
	     : len == 3 ? ((c & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu)
			: 0x10000;
	if ((cp >= 0x80 && cp <= 0x9f) || is_bidi(cp))
		snprintf(esc, 16, "\\u%04x", cp);
	return len;
}

static int put(FILE *f, const char *s, int keep_nl)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = s ? strlen(s) : 0;

	while (n) {
		char esc[16];
		size_t k = cw_term_char(p, n, keep_nl, esc);

		if (esc[0] ? fputs(esc, f) == EOF : fwrite(p, 1, k, f) != k)
			return -EIO;
		p += k;
		n -= k;
	}
	return ferror(f) ? -EIO : 0;
}

int cw_term_put(FILE *f, const char *s)
{
	return put(f, s, 0);
}

int cw_term_put_lines(FILE *f, const char *s)
{
	return put(f, s, 1);
}

size_t cw_term_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = s ? strlen(s) : 0, w = 0;

	while (n) {
		char esc[16];
		size_t k = cw_term_char(p, n, 0, esc);

		w += esc[0] ? strlen(esc) : 1;
		p += k;
		n -= k;
	}
	return w;
}

char *cw_term_escape(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (put(f, s, 0)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* --- JSON to a terminal ------------------------------------------------ */

struct jstream {
	FILE *under;
	unsigned char carry[4]; /* a character cut between two writes */
	size_t ncarry;
};

/* Writes n bytes of p, escaping C1 and bidi characters; returns the bytes
 * at its end that may begin a character still to come (0-3). */
static size_t jwrite(FILE *f, const unsigned char *p, size_t n, int last)
{
	size_t i = 0, from = 0;

	while (i < n) {
		char esc[16];
		size_t k;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		/* A lead byte whose character is not all here yet. */
		if (!last && ((p[i] & 0xe0) == 0xc0 ? 2u : (p[i] & 0xf0) == 0xe0 ? 3u : (p[i] & 0xf8) == 0xf0 ? 4u : 1u) > n - i)
			break;
		k = cw_term_char(p + i, n - i, 1, esc);
		/* Only the characters JSON leaves raw: C1 and bidi (a byte that
		 * is not UTF-8 is kept as it is). */
		if (esc[0] == '\\' && esc[1] == 'u') {
			fwrite(p + from, 1, i - from, f);
			fputs(esc, f);
			from = i + k;
		}
		i += k;
	}
	fwrite(p + from, 1, i - from, f);
	return n - i;
}

static ssize_t jstream_write(void *cookie, const char *buf, size_t size)
{
	struct jstream *j = cookie;
	unsigned char tmp[8];
	size_t used = 0;

	/* A character cut at the last write: completed from this one first. */
	while (j->ncarry && used < size) {
		size_t left;

		memcpy(tmp, j->carry, j->ncarry);
		tmp[j->ncarry] = (unsigned char)buf[used++];
		left = jwrite(j->under, tmp, j->ncarry + 1, 0);
		memcpy(j->carry, tmp + j->ncarry + 1 - left, left);
		j->ncarry = left;
	}
	if (used < size) {
		size_t left = jwrite(j->under, (const unsigned char *)buf + used, size - used, 0);

		memcpy(j->carry, buf + size - left, left);
		j->ncarry = left;
	}
	return ferror(j->under) ? -1 : (ssize_t)size;
}

static int jstream_close(void *cookie)
{
	struct jstream *j = cookie;
	int ret;

	if (j->ncarry)
		jwrite(j->under, j->carry, j->ncarry, 1);
	ret = fflush(j->under) ? -1 : 0;
	free(j);
	return ret;
}

FILE *cw_term_json_stream(FILE *under)
{
	cookie_io_functions_t io = {.write = jstream_write, .close = jstream_close};
	struct jstream *j = calloc(1, sizeof(*j));
	FILE *f;

	if (!j)
		return NULL;
	j->under = under;
	f = fopencookie(j, "w", io);
	if (!f)
		free(j);
	return f;
}
