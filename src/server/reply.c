/* JSON answers of every route: the body, its type and status, and the
 * {"error": ...} form. A leaf of server/: routes, the gate, /metrics and
 * /mcp fill a struct cw_reply, server.c sends it. */
#include "server/internal.h"
#include "util/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cw_reply_json(struct cw_reply *r, int status, json_t *j)
{
	r->status = status;
	r->ctype = "application/json";
	r->body = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	json_decref(j);
	if (!r->body) {
		r->status = 500;
		r->body = strdup("{\"error\":\"out of memory\"}");
	}
	r->len = r->body ? strlen(r->body) : 0;
}

void cw_reply_error(struct cw_reply *r, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cw_reply_json(r, status, json_pack("{s:o}", "error", cw_json_str(msg)));
	r->status = status;
}

void cw_reply_header(struct cw_reply *r, const char *k, const char *v)
{
	if (r->nhdr >= CW_REPLY_MAX_HDR)
		return;
	snprintf(r->hdr[r->nhdr][0], sizeof(r->hdr[0][0]), "%s", k);
	snprintf(r->hdr[r->nhdr][1], sizeof(r->hdr[0][1]), "%s", v);
	r->nhdr++;
}
