/* /api/v1/fleet: the agents of the config's fleet.nodes, asked for their
 * chains with the fan-out `explain --fleet` uses (fleet/fanout.h): status,
 * clock offset and round trip per node, its chain count and top chain, and
 * the NCCL straggler found across all of them (docs/api.md, docs/fleet.md).
 * The server reads the fleet settings from the same config file serve
 * was started with; the token is read per request so a rotated file is
 * picked up. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "fleet/fanout.h"
#include "fleet/fanout_nccl.h"
#include "util/strbuf.h"
#include "util/utf8.h"

#define FLEET_QUERY_MAX 256

static void add_warning(void *arg, const char *msg)
{
	cw_fleet_warning_add(arg, msg);
}

/* The fan-out's sentence about addr ("node \"ADDR\": ..."), or NULL. */
static const char *node_warning(const struct cw_fleet_result *fr, const char *addr)
{
	char prefix[300];

	snprintf(prefix, sizeof(prefix), "node \"%s\": ", addr);
	for (int i = 0; i < fr->nwarnings; i++)
		if (!strncmp(fr->warnings[i], prefix, strlen(prefix)))
			return fr->warnings[i] + strlen(prefix);
	return NULL;
}

static json_t *node_json(const struct cw_fleet_node *n, const struct cw_fleet_result *fr, json_t *chains)
{
	const char *w = node_warning(fr, n->addr);
	json_t *top = json_null();
	size_t i, count = 0;
	json_t *ch;

	/* chains are sorted by severity, then explained time: the first of
	 * this agent's is its top one. */
	json_array_foreach(chains, i, ch) {
		const char *agent = json_string_value(json_object_get(ch, "agent"));

		if (!agent || strcmp(agent, n->addr))
			continue;
		if (!count++) {
			json_t *rc = json_object_get(ch, "root_cause");

			json_decref(top);
			top = json_pack("{s:O?, s:O?, s:O?, s:O?}", "kind", json_object_get(rc, "kind"), "severity",
					json_object_get(ch, "severity"), "summary", json_object_get(rc, "summary"),
					"op", json_object_get(ch, "op"));
		}
	}
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "node", n->name, "address", n->addr, "status",
			 n->ok ? "ok" : n->http_status ? "error" : "unreachable", "error",
			 !n->ok && w ? cw_json_str(w) : !n->ok ? json_string("no answer") : json_null(),
			 "clock_offset_ns", n->skew.valid ? json_integer(n->skew.offset_ns) : json_null(), "rtt_ns",
			 n->skew.valid ? json_integer((json_int_t)n->skew.rtt_ns) : json_null(), "chains",
			 n->ok ? json_integer((json_int_t)count) : json_null(), "top_chain", top);
}

/* The NCCL straggler of the whole fleet: the first nccl_straggler chain
 * the cross-agent arrival rules found. */
static json_t *straggler_json(json_t *chains)
{
	size_t i;
	json_t *ch;

	json_array_foreach(chains, i, ch) {
		const char *kind = json_string_value(json_object_get(json_object_get(ch, "root_cause"), "kind"));

		if (kind && !strcmp(kind, "nccl_straggler"))
			return json_pack("{s:O?, s:O?, s:O?, s:O?}", "rank", json_object_get(ch, "rank"), "node",
					 json_object_get(ch, "node"), "lag_ns",
					 json_object_get(json_object_get(ch, "evidence"), "mean_lag_ns"), "summary",
					 json_object_get(json_object_get(ch, "root_cause"), "summary"));
	}
	return json_null();
}

void cw_route_fleet(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct cw_fleet_opts o = { 0 };
	struct cw_fleet_result fr = { 0 };
	const struct cw_config *cfg;
	const char *since = cw_api_arg(c, "since");
	json_t *merged = NULL, *nodes, *chains, *warnings;
	char err[512], q[FLEET_QUERY_MAX] = "";
	uint64_t from = 0, to = 0, deadline;
	sqlite3 *db;
	int rc;

	/* The window is checked here, on this agent's data, and handed on
	 * in nanoseconds (since: as given, each agent anchors it on its own
	 * newest data). */
	if (cw_api_open(s, &db, &deadline, r))
		return;
	rc = cw_api_window(db, c, &from, &to, r);
	cw_server_close_db(db);
	if (rc)
		return;
	if (since)
		snprintf(q, sizeof(q), "since=%s", since);
	else if (cw_api_arg(c, "from") || cw_api_arg(c, "to"))
		snprintf(q, sizeof(q), "from=%llu&to=%llu", (unsigned long long)from, (unsigned long long)to);
	if (cw_config_get(&cfg, err, sizeof(err))) {
		cw_reply_error(r, 500, "%s", err);
		return;
	}
	if (!cfg->nfleet_nodes) {
		cw_reply_json(r, 200,
			      json_pack("{s:s, s:b, s:[], s:n, s:[]}", "node", s->node, "configured", 0, "nodes",
					"straggler", "warnings"));
		return;
	}
	o.nodes = cfg->fleet_nodes;
	o.nnodes = cfg->nfleet_nodes;
	o.ca_cert = cfg->fleet_ca_cert;
	o.client_cert = cfg->fleet_client_cert;
	o.client_key = cfg->fleet_client_key;
	o.timeout_ns = cfg->fleet_timeout_ns;
	o.skew_warn_ns = cfg->fleet_skew_warn_ns;
	o.skew = 1;
	{
		char *t;

		if (cw_fleet_token(NULL, &t, err, sizeof(err))) {
			cw_reply_error(r, 500, "fleet token: %s", err);
			return;
		}
		o.token = t;
	}
	rc = cw_fleet_chains(&o, q[0] ? q : NULL, &merged, &fr, err, sizeof(err));
	if (rc && rc != -EHOSTUNREACH) {
		cw_reply_error(r, 500, "fleet: %s", err);
		goto out;
	}
	chains = merged ? json_object_get(merged, "chains") : NULL;
	warnings = merged ? json_object_get(merged, "warnings") : NULL;
	if (!warnings) {
		warnings = json_array();
		for (int i = 0; i < fr.nwarnings; i++)
			add_warning(warnings, fr.warnings[i]);
	} else {
		json_incref(warnings);
	}
	if (chains && fr.nok && cw_fleet_nccl_chains(&o, &fr, chains, add_warning, warnings, err, sizeof(err)) < 0)
		add_warning(warnings, err);
	nodes = json_array();
	for (int i = 0; i < fr.n; i++)
		json_array_append_new(nodes, node_json(&fr.nodes[i], &fr, chains));
	cw_reply_json(r, 200,
		      json_pack("{s:s, s:b, s:o, s:o, s:o, s:I}", "node", s->node, "configured", 1, "nodes", nodes,
				"straggler", chains ? straggler_json(chains) : json_null(), "warnings", warnings,
				"elapsed_ns", (json_int_t)fr.elapsed_ns));
out:
	json_decref(merged);
	cw_fleet_result_free(&fr);
	if (o.token) {
		explicit_bzero((char *)o.token, strlen(o.token));
		free((char *)o.token);
	}
}
