/* Shared between the server's files; not an API. */
#ifndef CW_SERVER_INTERNAL_H
#define CW_SERVER_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

/* Read deadlines (deadline.c): a whole request must arrive within
 * timeout_ns of the connection opening or of the previous answer. */
struct cw_conn_deadline;
struct cw_deadlines {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int inited, running, stop;
	uint64_t timeout_ns;
	struct cw_conn_deadline *head;
	atomic_uint_fast64_t closed; /* connections cut at their deadline */
};

struct cw_server {
	struct MHD_Daemon *d;
	char *db_path, *node, *cert_path;
	char *cert_pem, *key_pem, *ca_pem; /* must outlive the daemon */
	int tls, mtls, has_token;
	int no_auth;                       /* --no-auth: no credential (loopback only) */
	int mcp_live_tools;                /* /mcp: where, run_demo, export_timeline's path */
	uint8_t token_hash[32];            /* SHA-256 of the token */
	int64_t max_rows;
	size_t max_body;
	uint64_t timeout_ns;
	uint64_t started_wall_ns;
	int port;
	atomic_uint_fast64_t requests, rejected, errors;
	/* trace --serve: the session's live metrics (metrics/live_metrics.h) */
	struct cw_live_metrics *_Atomic live;
	struct cw_writer_lag *_Atomic wlag; /* trace --serve: writer lag (metrics/writer_lag.h) */
	struct cw_mcp_http *mcp;           /* /mcp sessions (mcp_http.c), made on first use */
	struct cw_check_env check;         /* for the MCP check tool */
	struct cw_chains_cache *chains;    /* /chains answers (routes_chains.c) */
	atomic_int stopping;               /* set before the daemon stops: streams end */
	struct cw_deadlines dl;
};

#define CW_REPLY_MAX_HDR 3

struct cw_reply {
	int status;
	char *body; /* malloc'd */
	size_t len;
	const char *ctype;
	int bearer_challenge; /* add WWW-Authenticate: Bearer */
	int nhdr;             /* extra response headers (Mcp-Session-Id, Allow, Set-Cookie) */
	char hdr[CW_REPLY_MAX_HDR][2][160];
	/* A streamed answer (/api/v1/stream) instead of body: the callback
	 * writes it piece by piece; stream_free releases stream_cls. */
	MHD_ContentReaderCallback stream;
	void *stream_cls;
	MHD_ContentReaderFreeCallback stream_free;
};

/* One gate for every route: mutual TLS when a client CA is configured, then
 * the bearer token when one is configured (the Authorization header, or
 * the dashboard's cookie). Returns 0 to let the request through; 1 when r
 * holds the answer to a browser's sign-in link (a 303 setting the cookie);
 * or fills r (403/401) and returns -EACCES. */
int cw_gate_check(struct cw_server *s, struct MHD_Connection *c, const char *method, const char *url,
		  struct cw_reply *r);
/* After a refusal: the same answer as an HTML page for a browser opening
 * the dashboard (GET of a non-API path that accepts text/html). */
void cw_gate_page(struct MHD_Connection *c, const char *method, const char *url, struct cw_reply *r);
int cw_token_hash(const char *tok, uint8_t out[32]);

/* Routes. body is the request body (NUL-terminated) for POST. */
void cw_route_dispatch(struct cw_server *s, struct MHD_Connection *c, const char *method,
		       const char *url, const char *body, size_t body_len, struct cw_reply *r);
void cw_metrics_render(struct cw_server *s, struct cw_reply *r);
/* /mcp (mcp_http.c): the MCP server over Streamable HTTP. */
void cw_mcp_route(struct cw_server *s, struct MHD_Connection *c, const char *method, const char *body,
		  size_t len, struct cw_reply *r);
void cw_mcp_http_free(struct cw_server *s);
/* DNS-rebinding and cross-site protection, the same on every route:
 * 0 when Origin (may be NULL) names this server's own host (the Host
 * header) or a loopback host and, on a loopback listener that asks for no
 * credential, Host names a loopback host too; else -EACCES and why. */
int cw_origin_check(const char *origin, const char *host, int loopback, char *why, size_t whylen);
/* The same for a request: fills r (403) and returns -EACCES when refused. */
int cw_gate_origin(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
/* Adds a response header (capped at CW_REPLY_MAX_HDR). */
void cw_reply_header(struct cw_reply *r, const char *k, const char *v);

/* Starts the watchdog; 0 or -errno. Stop it after the daemon. */
int cw_deadlines_start(struct cw_deadlines *d, uint64_t read_timeout_ns);
void cw_deadlines_stop(struct cw_deadlines *d);
/* MHD_OPTION_NOTIFY_CONNECTION callback, cls = the struct cw_deadlines. */
void cw_deadlines_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			 enum MHD_ConnectionNotificationCode code);
/* armed = 0 once a request has fully arrived, 1 once its answer is done. */
void cw_deadline_arm(struct cw_deadlines *d, struct MHD_Connection *c, int armed);

/* The /chains answer cache (routes_chains.c): start makes it and, with
 * warm, computes the default window's chains in the background; stop
 * (after the daemon) interrupts that and frees it. */
int cw_chains_cache_start(struct cw_server *s, int warm);
void cw_chains_cache_stop(struct cw_server *s);

void cw_reply_json(struct cw_reply *r, int status, json_t *j); /* steals j */
void cw_reply_error(struct cw_reply *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Opens the database read-only with a deadline after which any statement
 * on it is interrupted. */
int cw_server_open_db(struct cw_server *s, sqlite3 **out, uint64_t *deadline, char *err,
		      size_t errlen);
void cw_server_close_db(sqlite3 *db);

#endif
