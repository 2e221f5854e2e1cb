/* Request line, status line and framing headers (http_parse.h). Each
 * function reads only the n bytes it is given and accepts the narrow
 * grammar the HTTP/1.x servers it watches write; anything else is "not
 * one", never a guess. */
#include "inference/http_parse.h"

#include <string.h>

static const char http1[] = " HTTP/1.";

int cw_http_parse_request_line(const uint8_t *buf, size_t n, char method[CW_HTTP_METHOD_MAX],
			       char path[CW_HTTP_PATH_MAX])
{
	size_t i = 0, m = 0, p = 0, v;
	int in_path = 1;

	method[0] = '\0';
	path[0] = '\0';
	/* Method: 1 to CW_HTTP_METHOD_MAX - 1 upper-case letters, then a space. */
	while (i < n && buf[i] >= 'A' && buf[i] <= 'Z') {
		if (++m >= CW_HTTP_METHOD_MAX)
			return CW_REQLINE_BAD;
		i++;
	}
	if (i == n)
		return CW_REQLINE_MORE;
	if (m == 0 || buf[i] != ' ')
		return CW_REQLINE_BAD;
	memcpy(method, buf, m);
	method[m] = '\0';
	i++;
	/* Request-target: printable, no space; the path is kept up to '?' or
	 * '#' (the query string can hold secrets), the rest only checked. */
	while (i < n && buf[i] != ' ') {
		uint8_t c = buf[i];

		if (c < 0x21 || c > 0x7e)
			return CW_REQLINE_BAD;
		if (c == '?' || c == '#')
			in_path = 0;
		if (in_path && p < CW_HTTP_PATH_MAX - 1)
			path[p++] = (char)c;
		i++;
	}
	path[p] = '\0';
	if (i == n)
		return CW_REQLINE_MORE;
	if (i == m + 1)
		return CW_REQLINE_BAD; /* empty target: two spaces */
	/* " HTTP/1." ("PRI * HTTP/2.0", HTTP/2's preface, is not one). */
	for (v = 0; v < sizeof(http1) - 1; v++, i++) {
		if (i == n)
			return CW_REQLINE_MORE;
		if (buf[i] != (uint8_t)http1[v])
			return CW_REQLINE_BAD;
	}
	return CW_REQLINE_OK;
}

int cw_http_looks_tls(const uint8_t *b, size_t n)
{
	return n >= 1 && b[0] >= 0x14 && b[0] <= 0x17 && (n < 2 || b[1] == 0x03);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int cw_http_parse_status(const char *line, size_t n)
{
	if (n < 12 || memcmp(line, "HTTP/1.", 7) || !is_digit(line[7]) || line[8] != ' ' || line[9] < '1' ||
	    line[9] > '9' || !is_digit(line[10]) || !is_digit(line[11]) || (n > 12 && line[12] != ' '))
		return -1;
	return (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether s[0..n) starts with lower-case word, ignoring s's case. */
static int starts_with_ci(const char *s, size_t n, const char *word)
{
	size_t i, w = strlen(word);

	if (n < w)
		return 0;
	for (i = 0; i < w; i++)
		if (lower(s[i]) != word[i])
			return 0;
	return 1;
}

/* The offset of a header's value in line when its name is name (with
 * its colon), past optional white space; 0 when it is another header. */
static size_t value_of(const char *line, size_t n, const char *name)
{
	size_t i = strlen(name);

	if (!starts_with_ci(line, n, name))
		return 0;
	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	return i;
}

unsigned cw_http_header_line(const char *line, size_t n, int truncated, uint64_t *clen)
{
	size_t i, v;

	if ((v = value_of(line, n, "content-length:")) != 0) {
		uint64_t x = 0;
		size_t digits = 0;

		for (i = v; i < n && is_digit(line[i]); i++, digits++) {
			if (x > (UINT64_MAX - 9) / 10)
				return 0;
			x = x * 10 + (uint64_t)(line[i] - '0');
		}
		if (digits == 0 || (i == n && truncated))
			return 0;
		while (i < n && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i != n)
			return 0; /* "12, 12", "1e3": not a length we can trust */
		*clen = x;
		return CW_HDR_CLEN;
	}
	if ((v = value_of(line, n, "transfer-encoding:")) != 0) {
		for (i = v; i < n; i++)
			if (starts_with_ci(line + i, n - i, "chunked"))
				return CW_HDR_CHUNKED;
		return 0;
	}
	if ((v = value_of(line, n, "content-type:")) != 0)
		return starts_with_ci(line + v, n - v, "text/event-stream") ? CW_HDR_SSE : 0;
	return 0;
}
