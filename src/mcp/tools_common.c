/* Helpers every tool uses: arguments, the database, the time window. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/scope.h"
#include "mcp/tools_int.h"
#include "store/store.h"
#include "util/timeutil.h"

const char *tool_str(json_t *args, const char *k)
{
	return json_string_value(json_object_get(args, k));
}

int64_t tool_int(json_t *args, const char *k, int64_t def)
{
	json_t *v = json_object_get(args, k);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return def;
}

int tool_bool(json_t *args, const char *k)
{
	return json_is_true(json_object_get(args, k));
}

static int stop_handler(void *arg)
{
	return cw_mcp_should_stop(arg);
}

int tool_duration(json_t *args, const char *k, uint64_t *ns, char *err, size_t errlen)
{
	const char *v = tool_str(args, k);

	if (v && (cw_parse_duration(v, ns) || !*ns)) {
		snprintf(err, errlen, "invalid \"%s\" \"%s\": a duration such as 30s, 5m or 2h", k, v);
		return -EINVAL;
	}
	return 0;
}

int tool_open_db(struct cw_mcp_call *c, sqlite3 **db, char *err, size_t errlen)
{
	int rc;

	if ((rc = cw_store_open_reader(db, c->cfg->db_path, err, errlen)))
		return rc;
	sqlite3_progress_handler(*db, 1000, stop_handler, c);
	return 0;
}

void tool_close_db(sqlite3 *db)
{
	sqlite3_close_v2(db);
}

int tool_window_flags(sqlite3 *db, json_t *args, unsigned flags, uint64_t *from, uint64_t *to, char *err,
		      size_t errlen)
{
	struct cw_scope sc = { .names = CW_SCOPE_PARAMS };
	int rc;

	*from = *to = 0;
	sc.since = tool_str(args, "since");
	sc.from = tool_str(args, "from");
	sc.to = tool_str(args, "to");
	if ((rc = cw_scope_parse(&sc, err, errlen)) || (rc = cw_scope_window(db, &sc, flags)) < 0) {
		if (rc != -EINVAL)
			snprintf(err, errlen, "reading the window failed: %s", cw_store_strerror(rc));
		return rc;
	}
	*from = sc.from_ns;
	*to = sc.to_ns;
	return 0;
}

int tool_window(sqlite3 *db, json_t *args, uint64_t *from, uint64_t *to, char *err, size_t errlen)
{
	return tool_window_flags(db, args, 0, from, to, err, errlen);
}

int tool_since(json_t *args, uint64_t *ns, char *err, size_t errlen)
{
	struct cw_scope sc = { .names = CW_SCOPE_PARAMS };
	int rc;

	sc.since = tool_str(args, "since");
	rc = cw_scope_parse(&sc, err, errlen);
	*ns = sc.since_ns;
	return rc;
}

int tool_stop_reason(struct cw_mcp_call *c, int rc, const char *what, char *err, size_t errlen)
{
	if (atomic_load(&c->cancelled)) {
		snprintf(err, errlen, "%s: cancelled", what);
		return -ECANCELED;
	}
	if (cw_monotonic_ns() > c->deadline_ns) {
		snprintf(err, errlen, "%s exceeded the tool time limit; narrow the window (since/from/to)", what);
		return -ETIMEDOUT;
	}
	snprintf(err, errlen, "%s failed: %s", what, strerror(rc < 0 ? -rc : rc));
	return rc;
}

int tool_tenant_pids(sqlite3 *db, json_t *args, int64_t **pids, int *npids, char *err, size_t errlen)
{
	static const char *const keys[] = { "container", "pod", "namespace", "cgroup" };
	struct cw_scope sc = { .names = CW_SCOPE_PARAMS };
	int rc;

	*pids = NULL;
	*npids = 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = tool_str(args, keys[i]);

		if (v && (rc = cw_scope_tenant(&sc, keys[i], v, err, errlen)))
			return rc;
	}
	if ((rc = cw_scope_select(db, &sc)) < 0) {
		snprintf(err, errlen, "tenant filter: %s", cw_store_strerror(rc));
		return rc;
	}
	/* The caller owns the pids. */
	*pids = sc.pids;
	*npids = sc.npids;
	return 0;
}
