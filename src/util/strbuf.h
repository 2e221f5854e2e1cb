/* strbuf: a growable string with a hard size cap.
 *
 * Every buffer that may be fed by untrusted input (HTTP bodies, JSON-RPC,
 * remote process memory, user SQL results) goes through a strbuf with an
 * explicit cap, so a hostile peer cannot make causeway allocate without bound. */
#ifndef CW_UTIL_STRBUF_H
#define CW_UTIL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	char *buf;    /* always NUL-terminated once anything was added */
	size_t len;   /* bytes used, excluding the NUL */
	size_t alloc; /* bytes allocated */
	size_t cap;   /* maximum len; 0 means the default cap */
	int overflow; /* set once an append was refused by the cap */
};

#define STRBUF_DEFAULT_CAP ((size_t)64 << 20)
#define STRBUF_INIT { NULL, 0, 0, 0, 0 }

void strbuf_init(struct strbuf *sb, size_t cap);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
/* Returns 0, or -ENOSPC when the cap would be exceeded (nothing is added),
 * or -ENOMEM. */
int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_adds(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, char c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Returns the buffer ("" when empty) without giving up ownership. */
const char *strbuf_str(const struct strbuf *sb);
/* Hands the buffer to the caller (who frees it) and resets sb. */
char *strbuf_detach(struct strbuf *sb);

/* A fixed-size record field (events.h): the first n bytes of dst hold src,
 * cut at n, and NUL bytes after it, as the kernel pads comm. */
void cw_copy_padded(char *dst, const char *src, size_t n);

#endif
