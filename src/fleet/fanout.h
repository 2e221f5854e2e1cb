/* Fan-out: one question to every agent of a fleet, in parallel.
 *
 * All nodes are asked at once with libcurl's multi interface over TLS 1.3
 * (optionally with a client certificate and a bearer token), each bounded by
 * the same deadline and a response-size cap. Every answer is parsed with
 * jansson and validated; an unreachable, slow, erroring or garbage-speaking
 * node becomes a warning and the others still answer. Clock skew is
 * estimated concurrently on separate connections (skew.h). docs/fleet.md
 * walks through a setup. */
#ifndef CW_FLEET_FANOUT_H
#define CW_FLEET_FANOUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet/skew.h"

#define CW_FLEET_DEFAULT_TIMEOUT_NS (2ULL * 1000000000ULL)
#define CW_FLEET_DEFAULT_MAX_RESPONSE ((size_t)64 << 20)
#define CW_FLEET_MAX_NODES 1024

struct cw_fleet_opts {
	char **nodes;             /* "host:port" (https), or "http://host:port" */
	int nnodes;
	const char *ca_cert;      /* verifies the agents; NULL: the system store */
	const char *client_cert;  /* PEM, presented for mutual TLS */
	const char *client_key;
	const char *token;        /* sent as "Authorization: Bearer" */
	uint64_t timeout_ns;      /* for the whole fan-out; 0: default */
	size_t max_response;      /* per node; 0: default */
	int skew;                 /* also estimate clock skew */
	int skew_samples;         /* 0: CW_SKEW_DEFAULT_SAMPLES */
	uint64_t skew_warn_ns;    /* 0: CW_SKEW_DEFAULT_WARN_NS */
	/* One POST body per node (same order as nodes), for questions that
	 * differ by node (a page of rows); NULL: the same body for all. */
	const char *const *posts;
	/* Long fetches (export --nodes) report here (may be NULL): a new
	 * phase (NULL: the same), and the rows just stored (the callee
	 * sums them). */
	void (*progress)(void *arg, const char *phase, uint64_t rows);
	void *progress_arg;
};

struct cw_fleet_node {
	char *addr;        /* as given */
	char *name;        /* the node name it reported; addr until it answers */
	int ok;            /* answered 200 with valid JSON */
	long http_status;  /* 0: no HTTP answer */
	uint64_t elapsed_ns;
	json_t *body;      /* the parsed answer (ok only) */
	struct cw_skew skew;
};

struct cw_fleet_result {
	struct cw_fleet_node *nodes;
	int n, nok;
	char **warnings;   /* one sentence each */
	int nwarnings;
	uint64_t elapsed_ns;
	int skew_applied;  /* offsets were measured (see skew) */
};

/* Splits "a:1,b:2" into a NULL-terminated malloc'd array, validating
 * each address. Returns the count or -EINVAL with err naming the bad one. */
int cw_fleet_parse_nodes(const char *csv, char ***out, char *err, size_t errlen);
void cw_fleet_free_nodes(char **nodes);

/* GET path (with query string; or POST post_json when non-NULL) on every
 * node. Returns 0 when at least one node answered, -EHOSTUNREACH when
 * none did (the warnings say why), -EINVAL for bad options (err), or
 * -ENOMEM. out must be freed in every case. */
int cw_fleet_fetch(const struct cw_fleet_opts *o, const char *path, const char *post_json,
		   struct cw_fleet_result *out, char *err, size_t errlen);

/* Read-only SQL on every node, the request body {"sql", "params": [...],
 * "max_rows"}; *merged is
 *   {"columns": ["node", ...], "rows": [["<node>", ...], ...],
 *    "warnings": [...], "nodes": [...per-node status...]}
 * with rows in node order. Nodes whose columns differ from the first
 * answer are left out with a warning. */
/* req may be NULL when o->posts gives each node its own body. */
int cw_fleet_query_req(const struct cw_fleet_opts *o, json_t *req, json_t **merged,
		       struct cw_fleet_result *out, char *err, size_t errlen);

/* Chains from every node (query: the /api/v1/chains query string, may be
 * NULL); *merged is {"chains": [...], "warnings": [...], "nodes": [...]}
 * with each chain labelled "agent" (address) and "node" (name), sorted by
 * severity, then by explained time. */
int cw_fleet_chains(const struct cw_fleet_opts *o, const char *query, json_t **merged,
		    struct cw_fleet_result *out, char *err, size_t errlen);

void cw_fleet_result_free(struct cw_fleet_result *r);

/* The /api/v1/ops answers of r as {"columns": ["node", "source", "op",
 * [file, line, function,] [tenant,] count, p50_ns, ...], "rows": [...]};
 * a malformed answer is left out with a warning through warn. */
json_t *cw_fleet_merge_ops(const struct cw_fleet_result *r, int by_line, int per_tenant,
			   void (*warn)(void *arg, const char *msg), void *warn_arg);

/* Whether two warnings say the same about the same node: the node part
 * ("node \"ADDR\": ") exactly, the rest with its numbers ignored (a
 * node that fails every request fails after 1 ms, then 2 ms, ...). */
int cw_fleet_warning_same(const char *a, const char *b);
/* Appends msg to the JSON array arr unless the same warning is there. */
void cw_fleet_warning_add(json_t *arr, const char *msg);

/* The bearer token for the agents (token.c): flag_file (--token-file), else
 * $CW_TOKEN, else the config's fleet.token_file, else ~/.causeway/token as a
 * local serve generates it. 0 with *out malloc'd or NULL (none), or -errno
 * with err. */
int cw_fleet_token(const char *flag_file, char **out, char *err, size_t errlen);

#endif
