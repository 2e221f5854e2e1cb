/* The HTTPS API over a causeway database (docs/api.md).
 *
 * Read-only, versioned under /api/v1, served by libmicrohttpd with GnuTLS:
 * TLS 1.3 only; mutual TLS and an optional bearer token checked in one gate
 * (gate.c) before any route runs; user SQL through store/ro_query.h; explain
 * and the ops summary on their own read-only connection with a deadline. */
#ifndef CW_SERVER_SERVER_H
#define CW_SERVER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "check/report.h"

#define CW_SERVER_DEFAULT_LISTEN "127.0.0.1:7070"
#define CW_SERVER_DEFAULT_MAX_BODY (64 * 1024)
#define CW_SERVER_DEFAULT_MAX_ROWS 10000
#define CW_SERVER_DEFAULT_TIMEOUT_NS (10ULL * 1000000000ULL)
#define CW_SERVER_DEFAULT_READ_TIMEOUT_NS (10ULL * 1000000000ULL)
#define CW_SERVER_DEFAULT_PER_IP 16
#define CW_SERVER_DEFAULT_MAX_CONN 256

struct cw_server_opts {
	const char *listen;          /* "ADDR:PORT"; port 0 picks a free one */
	const char *db_path;
	const char *node;            /* reported in every answer */
	const char *cert_name;   /* the generated certificate's name; NULL: node */
	int no_tls;                  /* plain HTTP */
	const char *cert_file, *key_file; /* both NULL: a generated certificate */
	const char *tls_dir;         /* where the generated certificate lives */
	const char *client_ca_file;  /* set: clients need a certificate it signed */
	const char *token;           /* set: clients need "Authorization: Bearer <token>" */
	int no_auth;                 /* no token and no client CA, knowingly (loopback only) */
	int mcp_live_tools;          /* /mcp lists where and run_demo, export_timeline writes */
	int64_t max_rows;            /* 0: default */
	size_t max_body;             /* 0: default */
	uint64_t timeout_ns;         /* per request; 0: default */
	uint64_t read_timeout_ns;    /* a whole request must arrive within; 0: default */
	unsigned per_ip_limit;       /* concurrent connections per client IP; 0: default */
	unsigned max_connections;    /* 0: default */
	struct cw_check_env check;   /* what the MCP check tool names */
};

struct cw_server;

/* Loads the certificates, binds and starts serving on internal threads.
 * Returns 0 or -errno with one sentence in err. */
int cw_server_start(struct cw_server **out, const struct cw_server_opts *o, char *err,
		    size_t errlen);
/* The bound port (useful with port 0). */
int cw_server_port(const struct cw_server *s);
/* Path of the certificate being served (generated or given); NULL without TLS. */
const char *cw_server_cert_path(const struct cw_server *s);
void cw_server_stop(struct cw_server *s);

struct cw_live_metrics;
/* trace --serve: /metrics renders the running session's live families
 * (per-process latency histograms, errors, off-CPU time, the stall gauge)
 * from m instead of the store's aggregates. m must outlive the server. */
void cw_server_set_live_metrics(struct cw_server *s, struct cw_live_metrics *m);
struct cw_writer_lag;
/* trace --serve: /metrics adds the writer lag families (metrics/writer_lag.h)
 * from l, which must outlive the server. */
void cw_server_set_writer_lag(struct cw_server *s, struct cw_writer_lag *l);

/* Generates (or reuses, when both files exist and load) an ECDSA P-256
 * self-signed certificate for node in dir as server.crt and server.key, the
 * key written with mode 0600. Returns 0 or -errno with err filled. */
int cw_tls_selfsigned(const char *dir, const char *node, char **cert_path, char **key_path,
		      char *err, size_t errlen);

/* Reads a bearer token from path (first line, surrounding whitespace
 * trimmed; capped at 4 KiB). Returns a malloc'd string or NULL with err. */
char *cw_token_read_file(const char *path, char *err, size_t errlen);

/* The token file a server generates when none is configured (token_file.c):
 * $HOME/.causeway/token, or without a home "<db dir>/causeway-token" (db_path
 * may be NULL: then only the home one). 0 or -errno. */
int cw_token_default_path(const char *db_path, char *buf, size_t len);
/* The token in path, which must be a regular file of this user that no one
 * else may read (never a link); when there is none, a new random one (32
 * bytes from GnuTLS, hex) is written there 0600, never replacing anything.
 * Returns a malloc'd token (*created set when new) or NULL with err. */
char *cw_token_load_or_create(const char *path, int *created, char *err, size_t errlen);
/* Clients: the token of $HOME/.causeway/token when that file exists and is
 * private; NULL otherwise (err set when it exists but was refused). */
char *cw_token_read_default(char *err, size_t errlen);

#endif
