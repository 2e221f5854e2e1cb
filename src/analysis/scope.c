/* The scope of a read: window and tenant selection (scope.h). */
#include "analysis/scope.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "analysis/tenant_select.h"
#include "store/ro_requests.h"
#include "util/parse.h"
#include "util/timeutil.h"

/* --since (a flag) or "since" (a parameter); bare: since. */
static const char *name(const struct cw_scope *s, const char *k, int bare, char *buf, size_t len)
{
	snprintf(buf, len, s->names == CW_SCOPE_FLAGS ? "--%s" : bare ? "%s" : "\"%s\"", k);
	return buf;
}

/* A bare integer of 13-19 digits is wall nanoseconds (what every answer
 * carries, so a page or a script can send back what it got); anything
 * else is cw_parse_time's: RFC 3339 or Unix seconds. Times past INT64_MAX
 * ns (2262) do not fit the store's columns. */
static int parse_when(const char *v, uint64_t *out)
{
	size_t n = strlen(v);

	if (n > 12 && n < 20 && strspn(v, "0123456789") == n) {
		*out = strtoull(v, NULL, 10);
		return *out > (uint64_t)INT64_MAX ? -ERANGE : 0;
	}
	return cw_parse_time(v, out);
}

int cw_scope_tenant(struct cw_scope *s, const char *k, const char *value, char *err, size_t errlen)
{
	int rc = cw_tenant_filter_add(s->tf, &s->ntf, CW_TENANT_FILTERS_MAX, k, value, err, errlen);

	/* The parser names the flag ("bad --pod ..."); the API and MCP name
	 * their parameter. */
	if (rc == -EINVAL && s->names != CW_SCOPE_FLAGS && !strncmp(err, "bad --", 6))
		memmove(err + 4, err + 6, strlen(err + 6) + 1);
	return rc;
}

int cw_scope_parse(struct cw_scope *s, char *err, size_t errlen)
{
	char a[16], b[16], c[16], shown[CW_SHOWN_BUF], shown2[CW_SHOWN_BUF];

	s->since_ns = s->from_ns = s->to_ns = 0;
	if (s->since && (s->from || s->to)) {
		snprintf(err, errlen, "%s cannot be combined with %s or %s", name(s, "since", 0, a, sizeof(a)),
			 name(s, "from", 0, b, sizeof(b)), name(s, "to", 0, c, sizeof(c)));
		return -EINVAL;
	}
	if (s->since && (cw_parse_duration(s->since, &s->since_ns) < 0 || !s->since_ns)) {
		s->since_ns = 0;
		snprintf(err, errlen, "invalid duration \"%s\" (e.g. 30s, 5m, 2h)", cw_shown(s->since, shown));
		return -EINVAL;
	}
	if (s->from && parse_when(s->from, &s->from_ns) < 0) {
		snprintf(err, errlen, "invalid time \"%s\" (RFC 3339, Unix seconds or wall ns)",
			 cw_shown(s->from, shown));
		return -EINVAL;
	}
	if (s->to && parse_when(s->to, &s->to_ns) < 0) {
		snprintf(err, errlen, "invalid time \"%s\" (RFC 3339, Unix seconds or wall ns)", cw_shown(s->to, shown));
		return -EINVAL;
	}
	if (s->from && s->to && s->to_ns <= s->from_ns) {
		snprintf(err, errlen, "%s \"%s\" is not after %s \"%s\"", name(s, "to", 1, a, sizeof(a)),
			 cw_shown(s->to, shown), name(s, "from", 1, b, sizeof(b)), cw_shown(s->from, shown2));
		return -EINVAL;
	}
	return 0;
}

int cw_scope_window(sqlite3 *db, struct cw_scope *s, unsigned flags)
{
	uint64_t newest = 0, nreq = 0;
	int rc;

	if (!s->since_ns)
		return 0;
	if ((rc = cw_explain_newest_wall(db, &newest)) < 0)
		return rc;
	if ((flags & CW_SCOPE_NEWEST_REQUESTS) && (rc = cw_req_newest_wall(db, &nreq)) < 0)
		return rc;
	if (nreq > newest)
		newest = nreq;
	if (newest) {
		s->to_ns = newest;
		s->from_ns = newest > s->since_ns ? newest - s->since_ns : 1;
	}
	return 0;
}

int cw_scope_select(sqlite3 *db, struct cw_scope *s)
{
	int rc;

	free(s->pids);
	s->pids = NULL;
	s->npids = 0;
	if (!s->ntf)
		return 0;
	if ((rc = cw_tenant_select(db, s->tf, s->ntf, &s->pids)) < 0)
		return rc;
	s->npids = rc > 0 ? rc : -1;
	return 0;
}

void cw_scope_release(struct cw_scope *s)
{
	free(s->pids);
	s->pids = NULL;
	s->npids = 0;
}
