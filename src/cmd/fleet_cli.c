/* The fan-out side of query and explain: flags, config, and turning merged
 * answers back into the types the commands already print. */
#define _GNU_SOURCE
#include "cmd/fleet_cli.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "analysis/ras_report.h"
#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "cmd/tenant_opts.h"
#include "config/config.h"
#include "fleet/fanout_nccl.h"
#include "fleet/fetch.h"
#include "server/server.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/progress.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/utf8.h"

static const char *const flags_with_value[] = { "--nodes",	  "--ca-cert",	  "--client-cert",
						 "--client-key", "--token-file", "--node-timeout",
						 "--skew-warn",  NULL };

static int flag_index(const char *a, const char **val)
{
	*val = NULL;
	if (!strcmp(a, "--fleet"))
		return 100;
	for (int i = 0; flags_with_value[i]; i++) {
		size_t l = strlen(flags_with_value[i]);

		if (!strncmp(a, flags_with_value[i], l) && (a[l] == 0 || a[l] == '=')) {
			if (a[l] == '=')
				*val = a + l + 1;
			return i;
		}
	}
	return -1;
}

int cw_fleet_cli_wanted(int argc, char **argv)
{
	const char *v;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (flag_index(argv[i], &v) >= 0)
			return 1;
	}
	return 0;
}

int cw_fleet_cli_extract(int *argc, char **argv, int json, struct cw_fleet_opts *o)
{
	const char *vals[8] = { 0 }, *v;
	const struct cw_config *cfg;
	char err[512];
	int fleet = 0, i, j, k, n;

	memset(o, 0, sizeof(*o));
	for (i = 1, j = 1; i < *argc; i++) {
		k = flag_index(argv[i], &v);
		if (k < 0) {
			argv[j++] = argv[i];
			continue;
		}
		if (k == 100) {
			fleet = 1;
			continue;
		}
		if (!v) {
			if (i + 1 >= *argc) {
				cw_report_error(json, "option \"%s\" needs a value", argv[i]);
				return CW_EXIT_USAGE;
			}
			v = argv[++i];
		}
		vals[k] = v;
	}
	argv[j] = NULL;
	*argc = j;
	if (cw_config_get(&cfg, err, sizeof(err))) {
		cw_report_error(json, "%s", err);
		return CW_EXIT_USAGE;
	}
	if (vals[0]) {
		n = cw_fleet_parse_nodes(vals[0], &o->nodes, err, sizeof(err));
		if (n < 0) {
			cw_report_error(json, "--nodes: %s", err);
			return CW_EXIT_USAGE;
		}
		o->nnodes = n;
	} else if (cfg->nfleet_nodes) {
		/* The config's list: used with --fleet, or when TLS flags alone
		 * say a fan-out is meant. */
		o->nodes = calloc((size_t)cfg->nfleet_nodes + 1, sizeof(*o->nodes));
		if (!o->nodes)
			return CW_EXIT_FAIL;
		for (i = 0; i < cfg->nfleet_nodes; i++)
			if (!(o->nodes[i] = strdup(cfg->fleet_nodes[i])))
				return CW_EXIT_FAIL;
		o->nnodes = cfg->nfleet_nodes;
	} else {
		cw_report_error(json, fleet ? "--fleet: the config has no fleet.nodes list"
					    : "no nodes: give --nodes HOST:PORT,... or fleet.nodes "
					      "in the config");
		return CW_EXIT_USAGE;
	}
	o->ca_cert = vals[1] ? vals[1] : cfg->fleet_ca_cert;
	o->client_cert = vals[2] ? vals[2] : cfg->fleet_client_cert;
	o->client_key = vals[3] ? vals[3] : cfg->fleet_client_key;
	if (!!o->client_cert != !!o->client_key) {
		cw_report_error(json, "--client-cert and --client-key go together");
		return CW_EXIT_USAGE;
	}
	for (i = 1; i <= 3; i++) {
		const char *f = i == 1 ? o->ca_cert : i == 2 ? o->client_cert : o->client_key;

		if (f && access(f, R_OK)) {
			cw_report_error(json, "cannot read \"%s\": %s", f, strerror(errno));
			return CW_EXIT_USAGE;
		}
	}
	{
		char *t;

		if (cw_fleet_token(vals[4], &t, err, sizeof(err))) {
			cw_report_error(json, "%s", err);
			return CW_EXIT_USAGE;
		}
		o->token = t;
	}
	o->timeout_ns = cfg->fleet_timeout_ns;
	if (vals[5] && (cw_parse_duration(vals[5], &o->timeout_ns) || !o->timeout_ns)) {
		cw_report_error(json, "invalid --node-timeout \"%s\" (e.g. 2s, 500ms)", vals[5]);
		return CW_EXIT_USAGE;
	}
	o->skew_warn_ns = cfg->fleet_skew_warn_ns;
	if (vals[6] && (cw_parse_duration(vals[6], &o->skew_warn_ns) || !o->skew_warn_ns)) {
		cw_report_error(json, "invalid --skew-warn \"%s\" (e.g. 50ms)", vals[6]);
		return CW_EXIT_USAGE;
	}
	o->skew = 1;
	return 0;
}

void cw_fleet_cli_release(struct cw_fleet_opts *o)
{
	cw_fleet_free_nodes(o->nodes);
	if (o->token) {
		explicit_bzero((char *)o->token, strlen(o->token));
		free((char *)o->token);
	}
	memset(o, 0, sizeof(*o));
}

static void warn_line(void *arg, const char *msg)
{
	(void)arg;
	cw_warn("%s", msg);
}

/* Prints the fan-out warnings on stderr ("causeway: warning: ..."). */
static void cw_fleet_print_warnings(const struct cw_fleet_result *r)
{
	for (int i = 0; i < r->nwarnings; i++)
		cw_warn("%s", r->warnings[i]);
}

static int cell(json_t *v, struct cw_ro_value *c)
{
	memset(c, 0, sizeof(*c));
	if (json_is_integer(v)) {
		c->type = CW_RO_INT;
		c->i = json_integer_value(v);
	} else if (json_is_real(v)) {
		c->type = CW_RO_REAL;
		c->d = json_real_value(v);
	} else if (json_is_string(v)) {
		c->type = CW_RO_TEXT;
		c->len = json_string_length(v);
		if (!(c->p = strndup(json_string_value(v), c->len)))
			return -ENOMEM;
	} else if (json_is_true(v) || json_is_false(v)) {
		c->type = CW_RO_INT;
		c->i = json_is_true(v);
	} else {
		c->type = CW_RO_NULL;
	}
	return 0;
}

/* Converts a merged fan-out answer ({"columns", "rows"}) into the row
 * result type the query printers take. */
static int cw_fleet_rows_to_result(json_t *merged, struct cw_ro_result **out)
{
	json_t *cols = json_object_get(merged, "columns"), *rows = json_object_get(merged, "rows");
	struct cw_ro_result *r;
	size_t i, k, nc = json_array_size(cols), nr = json_array_size(rows);

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ncols = (int)nc;
	r->names = calloc(nc ? nc : 1, sizeof(*r->names));
	r->vals = calloc(nr * nc > 0 ? nr * nc : 1, sizeof(*r->vals));
	if (!r->names || !r->vals)
		goto nomem;
	for (i = 0; i < nc; i++)
		if (!(r->names[i] = strdup(json_string_value(json_array_get(cols, i)) ?: "")))
			goto nomem;
	for (i = 0; i < nr; i++) {
		json_t *row = json_array_get(rows, i);

		for (k = 0; k < nc; k++)
			if (cell(json_array_get(row, k), &r->vals[i * nc + k]))
				goto nomem;
		r->nrows++;
	}
	r->info.rows = r->nrows;
	r->info.max_rows = -1;
	*out = r;
	return 0;
nomem:
	cw_ro_result_free(r);
	return -ENOMEM;
}

static char *read_stdin(void)
{
	struct strbuf sb;
	char buf[4096];
	size_t n;

	strbuf_init(&sb, 1 << 20);
	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
		if (strbuf_add(&sb, buf, n)) {
			strbuf_release(&sb);
			return NULL;
		}
	return strbuf_detach(&sb);
}

static int add_param(struct strbuf *q, const char *k, const char *v)
{
	char *e = curl_easy_escape(NULL, v, 0);
	int rc;

	if (!e)
		return -ENOMEM;
	rc = strbuf_addf(q, "%s%s=%s", q->len ? "&" : "", k, e);
	curl_free(e);
	return rc;
}

/* Tenant filters travel to the agents as the API's query parameters
 * (docs/api.md), already validated here by the same parser. */
static int add_tenant_params(struct strbuf *q, const struct cw_scope *t)
{
	int rc = 0;

	for (int i = 0; i < t->ntf && !rc; i++)
		rc = add_param(q, cw_tenant_filter_flag(&t->tf[i]) + 2, t->tf[i].value);
	return rc;
}

/* The fan-out's own help: the flags that pick and reach the agents, the
 * reader's flags an agent answers to, and examples of both readers. */
static void fleet_usage(const char *cmd)
{
	int explain = !strcmp(cmd, "explain");

	printf("usage: causeway %s ... --nodes HOST:PORT,... | --fleet\n"
	       "         [--ca-cert FILE] [--client-cert FILE --client-key FILE]\n"
	       "         [--token-file FILE] [--node-timeout DURATION] [--skew-warn DURATION]\n"
	       "         %s\n\n"
	       "Asks every agent in parallel over TLS 1.3 (or plain HTTP for a node given\n"
	       "as http://HOST:PORT) and merges the answers; nodes that do not answer in\n"
	       "time become one warning each. See docs/fleet.md.\n\n"
	       "examples:\n",
	       cmd,
	       explain ? "[--since DURATION | --from TIME --to TIME] [--pid PID] [--json]"
		       : "[SQL] [--since DURATION] [--limit N] [--json | --csv]");
	if (explain)
		printf("  causeway explain --nodes gpu-node-01:8443,gpu-node-02:8443 --since 5m\n"
		       "  causeway explain --fleet --json\n"
		       "  causeway explain --nodes http://127.0.0.1:7070 --token-file token\n");
	else
		printf("  causeway query --nodes gpu-node-01:8443,gpu-node-02:8443\n"
		       "  causeway query --fleet \"SELECT node, source, count(*) FROM events GROUP BY node, source\"\n"
		       "  causeway query --nodes http://127.0.0.1:7070 --token-file token --csv\n");
}

int cw_fleet_cmd_query(int argc, char **argv, cw_fleet_rows_printer print)
{
	enum { O_CSV = 256, O_LIMIT, O_SINCE, O_LINE, O_PARAM, O_TMO, O_DB, O_PT, O_TENANT };
	static const struct option lo[] = {
		{ "per-tenant", no_argument, NULL, O_PT }, CW_TENANT_LONGOPTS(O_TENANT),
		{ "json", no_argument, NULL, 'j' },	      { "csv", no_argument, NULL, O_CSV },
		{ "limit", required_argument, NULL, O_LIMIT }, { "since", required_argument, NULL, O_SINCE },
		{ "group-by-line", no_argument, NULL, O_LINE }, { "param", required_argument, NULL, O_PARAM },
		{ "timeout", required_argument, NULL, O_TMO }, { "db", required_argument, NULL, O_DB },
		{ "help", no_argument, NULL, 'h' },	      { NULL, 0, NULL, 0 },
	};
	struct cw_fleet_opts o;
	struct cw_fleet_result fr = { 0 };
	struct cw_ro_result *rr = NULL;
	json_t *merged = NULL, *params = json_array();
	char err[1000], *sql = NULL, *stdin_sql = NULL;
	int json = 0, fmt = 0, by_line = 0, per_tenant = 0, c, rc, li;
	struct cw_scope tf = { .names = CW_SCOPE_FLAGS };
	struct cw_progress pg = { .fd = -1 };
	long long limit = 0;
	uint64_t limit_v;

	for (int i = 1; i < argc; i++)
		json |= !strcmp(argv[i], "--json");
	if ((rc = cw_fleet_cli_extract(&argc, argv, json, &o)))
		goto out;
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, "+:", lo, &li)) != -1) {
		switch (c) {
		case O_PT:
			per_tenant = 1;
			break;
		case O_TENANT:
			if ((rc = cw_scope_opt(&tf, lo, li, optarg, json, "query")))
				goto out;
			break;
		case 'j':
			fmt = 1;
			break;
		case O_CSV:
			fmt = 2;
			break;
		case O_LIMIT:
			if (cw_parse_uint(optarg, 1, 1000000000ULL, &limit_v)) {
				char shown[CW_SHOWN_BUF];

				cw_report_error(json, "query: invalid --limit \"%s\" (1 to 1000000000)",
						cw_shown(optarg, shown));
				rc = CW_EXIT_USAGE;
				goto out;
			}
			limit = (long long)limit_v;
			break;
		case O_SINCE:
			tf.since = optarg;
			break;
		case O_LINE:
			by_line = 1;
			break;
		case O_PARAM: {
			char *end;
			long long iv;

			errno = 0;
			iv = strtoll(optarg, &end, 10);
			if (!strcmp(optarg, "NULL"))
				json_array_append_new(params, json_null());
			else if (*optarg && !*end && !errno)
				json_array_append_new(params, json_integer(iv));
			else
				json_array_append_new(params, json_string(optarg));
			break;
		}
		case O_TMO:
			break; /* the agents apply their own per-request limit */
		case O_DB:
			cw_report_error(json, "query: --db and --nodes cannot be combined");
			rc = CW_EXIT_USAGE;
			goto out;
		case 'h':
			fleet_usage("query");
			rc = CW_EXIT_OK;
			goto out;
		default:
			rc = cw_opt_error(json, "query", c, argv);
			goto out;
		}
	}
	if (optind < argc)
		sql = argv[optind++];
	if (optind < argc) {
		rc = cw_opt_unexpected(json, "query", argv[optind]);
		goto out;
	}
	if (sql && !strcmp(sql, "-") && !(sql = stdin_sql = read_stdin())) {
		cw_report_error(json, "query: cannot read SQL from stdin (at most 1 MiB)");
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (sql && (tf.since || per_tenant || tf.ntf)) {
		/* As one store's query: SQL filters with its own WHERE. */
		cw_report_error(json, "query: %s applies to the summary only; filter SQL with a WHERE clause",
				tf.since ? "--since" : per_tenant ? "--per-tenant" : cw_tenant_filter_flag(&tf.tf[0]));
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (cw_scope_parse(&tf, err, sizeof(err))) {
		cw_report_error(json, "query: %s", err);
		rc = CW_EXIT_USAGE;
		goto out;
	}
	/* The agents' answers are the long part: a line while they come. */
	cw_progress_start(&pg, "query", "asking the agents", json);
	if (sql) {
		json_t *req = json_pack("{s:s, s:O}", "sql", sql, "params", params);

		if (req && limit)
			json_object_set_new(req, "max_rows", json_integer(limit));
		rc = req ? cw_fleet_query_req(&o, req, &merged, &fr, err, sizeof(err)) : -ENOMEM;
		json_decref(req);
	} else {
		struct strbuf path;

		strbuf_init(&path, 16384);
		rc = add_param(&path, "by", by_line ? "line" : "op");
		if (!rc && tf.since)
			rc = add_param(&path, "since", tf.since);
		if (!rc && per_tenant)
			rc = add_param(&path, "per_tenant", "1");
		if (!rc)
			rc = add_tenant_params(&path, &tf);
		if (!rc) {
			char *p = NULL;

			if (asprintf(&p, "/api/v1/ops?%s", strbuf_str(&path)) < 0)
				p = NULL;
			rc = p ? cw_fleet_fetch(&o, p, NULL, &fr, err, sizeof(err)) : -ENOMEM;
			free(p);
		}
		strbuf_release(&path);
		cw_progress_end(&pg);
		if (rc == 0 || rc == -EHOSTUNREACH)
			merged = cw_fleet_merge_ops(&fr, by_line, per_tenant, warn_line, NULL);
	}
	cw_progress_end(&pg);
	if (rc == -EINVAL || rc == -ENOMEM) {
		cw_report_error(json, "query: %s", err);
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (!fr.nok) {
		/* The error carries every node's reason (the agents' own
		 * messages), so they are not printed twice. */
		cw_fleet_none_answered(&fr, fr.n, err, sizeof(err));
		cw_report_error(json, "query: %s", err);
		rc = CW_EXIT_FAIL;
		goto out;
	}
	cw_fleet_print_warnings(&fr);
	if (cw_fleet_rows_to_result(merged, &rr)) {
		cw_report_error(json, "query: out of memory");
		rc = CW_EXIT_FAIL;
		goto out;
	}
	rc = print(rr, fmt) ? CW_EXIT_FAIL : CW_EXIT_OK;
	fflush(stdout);
out:
	cw_progress_end(&pg);
	cw_ro_result_free(rr);
	json_decref(merged);
	json_decref(params);
	cw_fleet_result_free(&fr);
	cw_fleet_cli_release(&o);
	free(stdin_sql);
	return rc;
}

/* A chain from an agent's JSON back into the engine's struct, so the fleet
 * report is printed by explain's own text printer. */
/* An agent's chain "container" object (docs/explain.md) back into a
 * tenant reference; the key is rebuilt as tenant_ref.c would. */
static void tenant_from_json(json_t *o, struct cw_tenant_ref *r)
{
	const char *v;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(o))
		return;
	r->known = 1;
#define TSTR(dst, key) snprintf(dst, sizeof(dst), "%s", (v = json_string_value(json_object_get(o, key))) ? v : "")
	TSTR(r->runtime, "runtime");
	TSTR(r->id, "id");
	TSTR(r->pod, "pod");
	TSTR(r->pod_uid, "pod_uid");
	TSTR(r->ns, "namespace");
	TSTR(r->cgroup, "cgroup");
	TSTR(r->qos, "qos");
#undef TSTR
	r->cgroup_id = (uint64_t)json_integer_value(json_object_get(o, "cgroup_id"));
	if (r->pod_uid[0])
		snprintf(r->key, sizeof(r->key), "pod:%s", r->pod_uid);
	else if (r->id[0])
		snprintf(r->key, sizeof(r->key), "container:%.100s", r->id);
	else
		snprintf(r->key, sizeof(r->key), "cgroup:%.100s", r->cgroup);
}

static void chain_from_json(json_t *j, struct cw_chain *c)
{
	json_t *rc = json_object_get(j, "root_cause"), *tl = json_object_get(j, "timeline"), *v;
	json_t *py = json_object_get(j, "python"), *cu = json_object_get(j, "culprit");
	const char *s;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->severity = CW_SEV_LOW;
	s = json_string_value(json_object_get(j, "severity"));
	for (int k = CW_SEV_HIGH; s && k <= CW_SEV_LOW; k++)
		if (!strcmp(s, cw_severity_name(k)))
			c->severity = k;
	s = json_string_value(json_object_get(rc, "kind"));
	for (int k = 0; s && k < CW_KIND_MAX; k++)
		if (!strcmp(s, cw_kind_name(k)))
			c->kind = k;
#define STR(dst, obj, key) snprintf(dst, sizeof(dst), "%s", json_string_value(json_object_get(obj, key)) ?: "")
#define U64(key) (uint64_t) json_integer_value(json_object_get(j, key))
	STR(c->op, j, "op");
	STR(c->source, j, "source");
	STR(c->summary, rc, "summary");
	STR(c->comm, j, "comm");
	STR(c->node, j, "node");
	c->count = U64("count");
	c->slow_count = U64("slow_count");
	c->p50_ns = U64("p50_ns");
	c->p95_ns = U64("p95_ns");
	c->p99_ns = U64("p99_ns");
	c->max_ns = U64("max_ns");
	c->slow_time_ns = U64("slow_time_ns");
	c->explained_ns = U64("explained_ns");
	c->tail_ratio = json_number_value(json_object_get(j, "tail_ratio"));
	c->explained_share = json_number_value(json_object_get(j, "explained_share"));
	c->pid = json_integer_value(json_object_get(j, "pid"));
	c->tid = json_integer_value(json_object_get(j, "tid"));
	c->rank = json_is_integer(json_object_get(j, "rank"))
			  ? (int)json_integer_value(json_object_get(j, "rank"))
			  : -1;
	json_array_foreach(tl, i, v) {
		struct cw_timeline_entry *e;

		if (c->ntimeline >= CW_CHAIN_MAX_TIMELINE)
			break;
		e = &c->timeline[c->ntimeline++];
		s = json_string_value(json_object_get(v, "layer"));
		for (int k = 0; s && k < CW_LAYER_MAX; k++)
			if (!strcmp(s, cw_layer_name(k)))
				e->layer = k;
		e->t_ns = (uint64_t)json_integer_value(json_object_get(v, "t_ns"));
		STR(e->text, v, "text");
	}
	json_array_foreach(json_object_get(j, "fix"), i, v) {
		const char *kind = json_string_value(json_array_get(json_object_get(j, "fix_kinds"), i));

		if (c->nfix >= CW_CHAIN_MAX_FIX)
			break;
		/* An agent without fix_kinds (older) sent commands only. */
		c->fix_kind[c->nfix] = !kind || !strcmp(kind, "command") ? CW_FIX_COMMAND
				       : !strcmp(kind, "code")             ? CW_FIX_CODE
									    : CW_FIX_ADVICE;
		snprintf(c->fix[c->nfix++], sizeof(c->fix[0]), "%s", json_string_value(v) ?: "");
	}
	if (json_is_object(py)) {
		c->has_python = 1;
		STR(c->py_file, py, "file");
		STR(c->py_function, py, "function");
		c->py_line = (int)json_integer_value(json_object_get(py, "line"));
	}
	if (json_is_object(cu)) {
		c->culprit.known = 1;
		STR(c->culprit.comm, cu, "comm");
		c->culprit.pid = json_integer_value(json_object_get(cu, "pid"));
		c->culprit.overlap_ns = (uint64_t)json_integer_value(json_object_get(cu, "overlap_ns"));
		c->culprit.cgroup_id = (uint64_t)json_integer_value(json_object_get(cu, "cgroup_id"));
		c->culprit.cpu = json_is_integer(json_object_get(cu, "cpu"))
					 ? (int)json_integer_value(json_object_get(cu, "cpu"))
					 : -1;
		tenant_from_json(json_object_get(cu, "container"), &c->culprit.container);
	}
	tenant_from_json(json_object_get(j, "container"), &c->container);
	/* The agent's NCCL RAS answer: shown as the agent stored it, never
	 * as "not asked" (the agent's JSON is re-encoded, lists cut to fit). */
	v = json_object_get(j, "ras");
	if (json_is_object(v) && json_is_string(json_object_get(v, "status")) &&
	    strcmp(json_string_value(json_object_get(v, "status")), "not_asked")) {
		json_t *copy = json_deep_copy(v);

		if (copy)
			(void)cw_ras_fit(copy, c->ras, sizeof(c->ras));
		json_decref(copy);
	}
	{
		const char *key;

		json_object_foreach(json_object_get(j, "evidence"), key, v) {
			struct cw_evidence *e;

			if (c->nevidence >= CW_CHAIN_MAX_EVIDENCE)
				break;
			e = &c->evidence[c->nevidence++];
			snprintf(e->key, sizeof(e->key), "%s", key);
			e->value = json_number_value(v);
			e->is_int = json_is_integer(v);
		}
	}
#undef STR
#undef U64
}

static int print_chains_text(json_t *merged, const struct cw_fleet_result *fr)
{
	struct cw_explain_result r = { 0 };
	json_t *chains = json_object_get(merged, "chains");
	size_t n = json_array_size(chains);
	int rc;

	r.chains = calloc(n ? n : 1, sizeof(*r.chains));
	if (!r.chains)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		chain_from_json(json_array_get(chains, i), &r.chains[i]);
	r.count = (int)n;
	/* The window that covers every node's. */
	for (int i = 0; i < fr->n; i++) {
		json_t *w = json_object_get(fr->nodes[i].body, "window");
		uint64_t f = (uint64_t)json_integer_value(json_object_get(w, "from_ns"));
		uint64_t t = (uint64_t)json_integer_value(json_object_get(w, "to_ns"));

		if (!fr->nodes[i].ok || !w)
			continue;
		if (f && (!r.from_wall_ns || f < r.from_wall_ns))
			r.from_wall_ns = f;
		if (t > r.to_wall_ns)
			r.to_wall_ns = t;
		r.ops_analysed += (uint64_t)json_integer_value(json_object_get(w, "ops_analysed"));
		r.calls_analysed += (uint64_t)json_integer_value(json_object_get(w, "calls_analysed"));
		r.calls_failed += (uint64_t)json_integer_value(json_object_get(w, "calls_failed"));
	}
	printf("%d of %d nodes answered", fr->nok, fr->n);
	if (fr->skew_applied) {
		printf("; timeline times shifted onto this host's clock (offsets:");
		for (int i = 0; i < fr->n; i++)
			if (fr->nodes[i].ok && fr->nodes[i].skew.valid)
				printf(" %s %+.1f ms", fr->nodes[i].name,
				       (double)fr->nodes[i].skew.offset_ns / 1e6);
		printf(")");
	}
	printf("\n");
	rc = cw_explain_print_text(stdout, &r, isatty(STDOUT_FILENO));
	cw_explain_result_free(&r);
	return rc < 0 ? rc : 0;
}


static void add_warning(void *arg, const char *msg)
{
	cw_fleet_warning_add(arg, msg);
}

int cw_fleet_cmd_explain(int argc, char **argv)
{
	enum { O_FROM = 256, O_TO, O_PP, O_NOSTORE, O_DB, O_PT, O_TENANT };
	static const struct option lo[] = {
		{ "per-tenant", no_argument, NULL, O_PT }, CW_TENANT_LONGOPTS(O_TENANT),
		{ "since", required_argument, NULL, 's' }, { "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },	   { "pid", required_argument, NULL, 'p' },
		{ "per-process", no_argument, NULL, O_PP }, { "json", no_argument, NULL, 'j' },
		{ "no-store", no_argument, NULL, O_NOSTORE }, { "db", required_argument, NULL, O_DB },
		{ "help", no_argument, NULL, 'h' },	   { NULL, 0, NULL, 0 },
	};
	struct cw_fleet_opts o;
	struct cw_fleet_result fr = { 0 };
	struct strbuf q = STRBUF_INIT;
	json_t *merged = NULL;
	char err[1000];
	struct cw_scope tf = { .names = CW_SCOPE_FLAGS };
	struct cw_progress pg = { .fd = -1 };
	int json = 0, c, rc, li;

	for (int i = 1; i < argc; i++)
		json |= !strcmp(argv[i], "--json");
	if ((rc = cw_fleet_cli_extract(&argc, argv, json, &o)))
		goto out;
	strbuf_init(&q, 16384);
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, "+:", lo, &li)) != -1) {
		switch (c) {
		case O_PT:
			rc = add_param(&q, "per_tenant", "1");
			break;
		case O_TENANT:
			if (cw_scope_opt(&tf, lo, li, optarg, json, "explain")) {
				rc = CW_EXIT_USAGE;
				goto out;
			}
			break;
		case 's':
			tf.since = optarg;
			rc = add_param(&q, "since", optarg);
			break;
		case O_FROM:
			tf.from = optarg;
			rc = add_param(&q, "from", optarg);
			break;
		case O_TO:
			tf.to = optarg;
			rc = add_param(&q, "to", optarg);
			break;
		case 'p':
			rc = add_param(&q, "pid", optarg);
			break;
		case O_PP:
		case O_NOSTORE:
			break; /* a fan-out never writes to the agents' stores */
		case 'j':
			json = 1;
			break;
		case O_DB:
			cw_report_error(json, "explain: --db and --nodes cannot be combined");
			rc = CW_EXIT_USAGE;
			goto out;
		case 'h':
			fleet_usage("explain");
			rc = CW_EXIT_OK;
			goto out;
		default:
			rc = cw_opt_error(json, "explain", c, argv);
			goto out;
		}
		if (rc) {
			cw_report_error(json, "explain: option value too long");
			rc = CW_EXIT_USAGE;
			goto out;
		}
	}
	if (optind < argc) {
		rc = cw_opt_unexpected(json, "explain", argv[optind]);
		goto out;
	}
	/* Checked here as one store's explain checks it: each agent anchors
	 * since on its own newest data. */
	if (cw_scope_parse(&tf, err, sizeof(err))) {
		cw_report_error(json, "explain: %s", err);
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if ((cw_global_node && add_param(&q, "node", cw_global_node)) || add_tenant_params(&q, &tf)) {
		rc = CW_EXIT_FAIL;
		goto out;
	}
	cw_progress_start(&pg, "explain", "asking the agents", json);
	rc = cw_fleet_chains(&o, strbuf_str(&q), &merged, &fr, err, sizeof(err));
	if (rc && rc != -EHOSTUNREACH) {
		cw_progress_end(&pg);
		cw_report_error(json, "explain: %s", err);
		rc = CW_EXIT_USAGE;
		goto out;
	}
	if (!fr.nok) {
		cw_progress_end(&pg);
		cw_fleet_none_answered(&fr, fr.n, err, sizeof(err));
		cw_report_error(json, "explain: %s", err);
		rc = CW_EXIT_FAIL;
		goto out;
	}
	{
		/* The NCCL rules need every agent's ranks at once: run here. */
		int n = cw_fleet_nccl_chains(&o, &fr, json_object_get(merged, "chains"), add_warning,
					     json_object_get(merged, "warnings"), err, sizeof(err));

		if (n < 0)
			add_warning(json_object_get(merged, "warnings"), err);
	}
	cw_progress_end(&pg);
	if (json) {
		char *s = json_dumps(merged, JSON_INDENT(2) | JSON_REAL_PRECISION(10));

		rc = s ? CW_EXIT_OK : CW_EXIT_FAIL;
		if (s)
			puts(s);
		free(s);
	} else {
		cw_fleet_print_warnings(&fr);
		rc = print_chains_text(merged, &fr) ? CW_EXIT_FAIL : CW_EXIT_OK;
	}
	fflush(stdout);
out:
	cw_progress_end(&pg);
	json_decref(merged);
	cw_fleet_result_free(&fr);
	cw_fleet_cli_release(&o);
	strbuf_release(&q);
	return rc;
}
