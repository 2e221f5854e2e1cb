/* The byte-level pieces of http_conn.c: the start of an HTTP/1.x request
 * line, a response's status line and the few response headers that frame
 * its body. Internal to src/inference; every input is wire bytes. */
#ifndef CW_INFERENCE_HTTP_PARSE_H
#define CW_INFERENCE_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "inference/http_conn.h"

enum cw_http_reqline {
	CW_REQLINE_BAD = -1, /* not the start of an HTTP/1.x request line */
	CW_REQLINE_MORE = 0, /* a valid start; the bytes that decide are not there yet */
	CW_REQLINE_OK = 1,   /* method, space, request-target, " HTTP/1." */
};

/* Reads buf[0..n) as the start of a request line: "METHOD target HTTP/1.".
 * method is filled once its space was seen ("" before), path with the
 * target up to '?', '#' or its end, truncated to CW_HTTP_PATH_MAX - 1;
 * both are NUL-terminated printable ASCII whatever the result. */
int cw_http_parse_request_line(const uint8_t *buf, size_t n, char method[CW_HTTP_METHOD_MAX],
			       char path[CW_HTTP_PATH_MAX]);

/* Whether b[0..n) starts like a TLS record (content type 20-23, version
 * major 3): a server terminating TLS itself. */
int cw_http_looks_tls(const uint8_t *b, size_t n);

/* The status of a status line's start "HTTP/1.x NNN" (line[0..n), no
 * CRLF), 100-999; -1 when it is not one. */
int cw_http_parse_status(const char *line, size_t n);

/* What a response header line (line[0..n), no CRLF; complete when
 * !truncated) says about the body's framing. */
#define CW_HDR_CLEN 1u	  /* Content-Length: *clen */
#define CW_HDR_CHUNKED 2u /* Transfer-Encoding: ... chunked */
#define CW_HDR_SSE 4u	  /* Content-Type: text/event-stream */
unsigned cw_http_header_line(const char *line, size_t n, int truncated, uint64_t *clen);

#endif
