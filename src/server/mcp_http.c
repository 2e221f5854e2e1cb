/* /mcp: the MCP server over Streamable HTTP (docs/mcp.md), behind the same
 * gate as every route (TLS 1.3, mutual TLS, bearer token).
 *
 *   POST    one JSON-RPC message (or a 2025-03-26 batch): 200 with the
 *           answer as JSON, or as an SSE stream when the client accepts one
 *           and asked for progress; 202 for notifications and responses.
 *   GET     405: the server sends no requests of its own, so there is no
 *           stream to offer.
 *   DELETE  ends the session named by Mcp-Session-Id.
 *
 * Sessions: initialize (without Mcp-Session-Id) creates one whose id is 32
 * random bytes from GnuTLS in hex; every later request carries it, and an
 * unknown or ended id gets 404 so the client starts over. Origin and Host
 * are checked for every route, this one included, in gate.c. */
#define _GNU_SOURCE
#include "server/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

#define MAX_SESSIONS 128
#define MAX_SESSIONS_PER_CLIENT 32
#define SESSION_ID_BYTES 32

struct http_sess {
	char id[SESSION_ID_BYTES * 2 + 1];
	struct cw_mcp_session s;
	char client[INET6_ADDRSTRLEN]; /* the address that made it */
	uint64_t last_ns;
	int refs;
	int ended;
};

struct cw_mcp_http {
	pthread_mutex_t mu;
	struct cw_mcp_config cfg;
	struct http_sess *tab[MAX_SESSIONS];
};

static pthread_mutex_t create_mu = PTHREAD_MUTEX_INITIALIZER;

static struct cw_mcp_http *state(struct cw_server *s)
{
	struct cw_mcp_http *h;

	pthread_mutex_lock(&create_mu);
	h = s->mcp;
	if (!h && (h = calloc(1, sizeof(*h)))) {
		pthread_mutex_init(&h->mu, NULL);
		h->cfg.db_path = s->db_path;
		h->cfg.node = s->node;
		h->cfg.check = s->check;
		h->cfg.transport = "http";
		h->cfg.timeout_ns = s->timeout_ns;
		/* What acts on live processes or writes files is off over the
		 * network unless the config says otherwise (server.mcp_live_tools);
		 * then it runs with the server's rights. */
		h->cfg.live_tools_off = s->mcp_live_tools ? NULL : "set server.mcp_live_tools: true in the config";
		h->cfg.allow_where = s->mcp_live_tools && geteuid() == 0;
		h->cfg.allow_export_path = s->mcp_live_tools;
		h->cfg.allow_demo = s->mcp_live_tools;
		h->cfg.demo_keep_db = 0;
		s->mcp = h;
	}
	pthread_mutex_unlock(&create_mu);
	return h;
}

static void sess_free(struct http_sess *e)
{
	cw_mcp_session_destroy(&e->s);
	explicit_bzero(e->id, sizeof(e->id));
	free(e);
}

void cw_mcp_http_free(struct cw_server *s)
{
	struct cw_mcp_http *h = s->mcp;

	if (!h)
		return;
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (h->tab[i])
			sess_free(h->tab[i]);
	pthread_mutex_destroy(&h->mu);
	free(h);
	s->mcp = NULL;
}

/* Constant-time in the id's content: ids are bearer secrets. */
static int id_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned)(a[i] ^ b[i]);
	return !d;
}

static struct http_sess *sess_get(struct cw_mcp_http *h, const char *id)
{
	struct http_sess *found = NULL;

	pthread_mutex_lock(&h->mu);
	for (int i = 0; i < MAX_SESSIONS; i++) {
		if (h->tab[i] && !h->tab[i]->ended && id_equal(h->tab[i]->id, id)) {
			found = h->tab[i];
			found->refs++;
			found->last_ns = cw_monotonic_ns();
			break;
		}
	}
	pthread_mutex_unlock(&h->mu);
	return found;
}

static void sess_put(struct cw_mcp_http *h, struct http_sess *e)
{
	int i, gone = 0;

	pthread_mutex_lock(&h->mu);
	if (--e->refs == 0 && e->ended) {
		for (i = 0; i < MAX_SESSIONS; i++)
			if (h->tab[i] == e)
				h->tab[i] = NULL;
		gone = 1;
	}
	pthread_mutex_unlock(&h->mu);
	if (gone)
		sess_free(e);
}

/* A new session for client (its address) in the table. A client past
 * MAX_SESSIONS_PER_CLIENT gives up its own least recently used session; a
 * full table gives up the least recently used one of anyone: a client that
 * initializes without ever ending its sessions only ever pushes out idle
 * ones, and never locks the others out. Sessions with a request in flight
 * stay. Returns it with one reference, or NULL (every session busy). */
static struct http_sess *sess_new(struct cw_mcp_http *h, const char *client)
{
	unsigned char rnd[SESSION_ID_BYTES];
	struct http_sess *e, *victim = NULL;
	uint64_t now = cw_monotonic_ns();
	int slot = -1, mine = 0, lru = -1, lru_mine = -1, i;

	if (gnutls_rnd(GNUTLS_RND_RANDOM, rnd, sizeof(rnd)) < 0)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	for (i = 0; i < SESSION_ID_BYTES; i++)
		snprintf(e->id + 2 * i, 3, "%02x", rnd[i]);
	explicit_bzero(rnd, sizeof(rnd));
	snprintf(e->client, sizeof(e->client), "%s", client);
	cw_mcp_session_init(&e->s);
	e->last_ns = now;
	e->refs = 1;
	pthread_mutex_lock(&h->mu);
	for (i = 0; i < MAX_SESSIONS; i++) {
		struct http_sess *t = h->tab[i];
		int same;

		if (!t) {
			if (slot < 0)
				slot = i;
			continue;
		}
		same = !strcmp(t->client, client);
		mine += same;
		if (t->refs)
			continue;
		if (lru < 0 || t->last_ns < h->tab[lru]->last_ns)
			lru = i;
		if (same && (lru_mine < 0 || t->last_ns < h->tab[lru_mine]->last_ns))
			lru_mine = i;
	}
	if (mine >= MAX_SESSIONS_PER_CLIENT && lru_mine >= 0)
		slot = lru_mine;
	else if (slot < 0)
		slot = lru;
	if (slot >= 0) {
		victim = h->tab[slot];
		h->tab[slot] = e;
	}
	pthread_mutex_unlock(&h->mu);
	if (victim)
		sess_free(victim);
	if (slot < 0) {
		sess_free(e);
		return NULL;
	}
	return e;
}

/* The client's address as text ("" when unknown). */
static const char *client_addr(struct MHD_Connection *c, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	buf[0] = 0;
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
	return buf;
}

static void sess_end(struct cw_mcp_http *h, struct http_sess *e)
{
	pthread_mutex_lock(&h->mu);
	e->ended = 1;
	pthread_mutex_unlock(&h->mu);
}

static const char *hdr(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, k);
}

static void reply_rpc_error(struct cw_reply *r, int status, int code, const char *msg)
{
	cw_reply_json(r, status, cw_jsonrpc_error(NULL, code, "%s", msg));
}

struct sse {
	struct strbuf sb;
};

static void sse_event(struct strbuf *sb, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(10));

	if (s)
		strbuf_addf(sb, "event: message\ndata: %s\n\n", s);
	free(s);
}

static void sse_notify(void *arg, json_t *msg)
{
	sse_event(&((struct sse *)arg)->sb, msg);
	json_decref(msg);
}

/* The answer to a POST: none (202), one SSE event (the stream already
 * holds the progress notifications) or a JSON body. Releases sb. */
static void reply_answer(struct cw_reply *r, json_t *out, int stream, struct strbuf *sb)
{
	if (!out) {
		r->status = 202;
		r->body = NULL;
		r->len = 0;
	} else if (stream) {
		sse_event(sb, out);
		json_decref(out);
		r->status = 200;
		r->ctype = "text/event-stream";
		r->len = sb->len;
		r->body = strbuf_detach(sb);
	} else {
		cw_reply_json(r, 200, out);
	}
	strbuf_release(sb);
}

static int accepts(struct MHD_Connection *c, const char *type)
{
	const char *a = hdr(c, MHD_HTTP_HEADER_ACCEPT);

	return !a || strstr(a, type) || strstr(a, "*/*");
}

/* The progress token of a tools/call, so that we know to stream. */
static int wants_progress(const char *body, size_t len)
{
	json_t *v = json_loadb(body, len, 0, NULL);
	int r = json_object_get(json_object_get(json_object_get(v, "params"), "_meta"), "progressToken") != NULL;

	json_decref(v);
	return r;
}

/* The version a stateless-revision message names in params._meta (copied
 * into v), or 0 for a message of the handshake era. */
static int stateless_version(const char *body, size_t len, char *v, size_t vlen)
{
	json_t *j = json_loadb(body, len, 0, NULL);
	const char *s = json_is_object(j) ? cw_mcp_request_version(json_object_get(j, "params")) : NULL;
	int r = s != NULL;

	if (s)
		snprintf(v, vlen, "%s", s);
	json_decref(j);
	return r;
}

/* One stateless request: a session of its own, for this request only. */
static void stateless(struct cw_mcp_http *h, struct MHD_Connection *c, const char *body, size_t len,
		      struct cw_reply *r)
{
	struct cw_mcp_session sess;
	struct sse sse;
	enum cw_mcp_kind kind;
	int stream = accepts(c, "text/event-stream") && hdr(c, MHD_HTTP_HEADER_ACCEPT) && wants_progress(body, len);
	json_t *out;

	cw_mcp_session_init(&sess);
	strbuf_init(&sse.sb, (size_t)8 << 20);
	out = cw_mcp_handle(&h->cfg, &sess, body, len, stream ? sse_notify : NULL, &sse, &kind, NULL);
	reply_answer(r, out, stream, &sse.sb);
	cw_mcp_session_destroy(&sess);
}

static void post(struct cw_server *s, struct cw_mcp_http *h, struct MHD_Connection *c, const char *body,
		 size_t len, struct cw_reply *r)
{
	const char *sid = hdr(c, "Mcp-Session-Id"), *pv = hdr(c, "MCP-Protocol-Version"), *ct;
	struct http_sess *e = NULL, *fresh = NULL;
	struct sse sse;
	enum cw_mcp_kind kind;
	const char *method = NULL;
	char bv[32], addr[INET6_ADDRSTRLEN];
	int stream, modern;
	json_t *out;

	ct = hdr(c, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strncasecmp(ct, "application/json", 16)) {
		reply_rpc_error(r, 415, CW_JSONRPC_INVALID_REQUEST, "Content-Type must be application/json");
		return;
	}
	if (!accepts(c, "application/json") && !accepts(c, "text/event-stream")) {
		reply_rpc_error(r, 406, CW_JSONRPC_INVALID_REQUEST,
				"Accept must include application/json and text/event-stream");
		return;
	}
	if (pv) {
		int ok = !strcmp(pv, CW_MCP_PROTOCOL_STATELESS);

		for (int i = 0; cw_mcp_protocol_versions[i]; i++)
			ok |= !strcmp(pv, cw_mcp_protocol_versions[i]);
		if (!ok) {
			reply_rpc_error(r, 400, CW_JSONRPC_INVALID_REQUEST, "unsupported MCP-Protocol-Version");
			return;
		}
	}
	modern = stateless_version(body, len, bv, sizeof(bv));
	if (modern || (pv && !strcmp(pv, CW_MCP_PROTOCOL_STATELESS))) {
		/* The stateless revision: no session; the header and the body
		 * must name the same version. */
		if (!modern || !pv || strcmp(pv, bv)) {
			reply_rpc_error(r, 400, CW_JSONRPC_INVALID_REQUEST,
					"MCP-Protocol-Version and params._meta protocolVersion must match");
			return;
		}
		stateless(h, c, body, len, r);
		return;
	}
	if (sid) {
		e = sess_get(h, sid);
		if (!e) {
			reply_rpc_error(r, 404, CW_JSONRPC_INVALID_REQUEST,
					"session not found (ended or expired): initialize again");
			return;
		}
	} else {
		/* Only initialize may come without a session. */
		json_t *v = json_loadb(body, len, 0, NULL);
		const char *m = json_string_value(json_object_get(v, "method"));
		int init = m && !strcmp(m, "initialize");

		json_decref(v);
		if (!init) {
			reply_rpc_error(r, 400, CW_JSONRPC_INVALID_REQUEST,
					"missing Mcp-Session-Id header: send initialize first");
			return;
		}
		e = fresh = sess_new(h, client_addr(c, addr, sizeof(addr)));
		if (!e) {
			reply_rpc_error(r, 503, CW_JSONRPC_INTERNAL_ERROR,
					"every MCP session is answering a request; try again in a moment");
			return;
		}
	}
	stream = accepts(c, "text/event-stream") && hdr(c, MHD_HTTP_HEADER_ACCEPT) && wants_progress(body, len);
	strbuf_init(&sse.sb, (size_t)8 << 20);
	out = cw_mcp_handle(&h->cfg, &e->s, body, len, stream ? sse_notify : NULL, &sse, &kind, &method);
	if (fresh) {
		/* A failed initialize leaves no session behind. */
		if (out && json_object_get(out, "result"))
			cw_reply_header(r, "Mcp-Session-Id", e->id);
		else
			sess_end(h, e);
	}
	reply_answer(r, out, stream, &sse.sb);
	sess_put(h, e);
	(void)s;
	(void)method;
}

void cw_mcp_route(struct cw_server *s, struct MHD_Connection *c, const char *method, const char *body,
		  size_t len, struct cw_reply *r)
{
	struct cw_mcp_http *h = state(s);
	struct http_sess *e;
	const char *sid;

	if (!h) {
		cw_reply_error(r, 500, "out of memory");
		return;
	}
	if (!strcmp(method, "POST")) {
		post(s, h, c, body, len, r);
		return;
	}
	if (!strcmp(method, "DELETE")) {
		sid = hdr(c, "Mcp-Session-Id");
		if (!sid) {
			reply_rpc_error(r, 400, CW_JSONRPC_INVALID_REQUEST, "missing Mcp-Session-Id header");
			return;
		}
		e = sess_get(h, sid);
		if (!e) {
			reply_rpc_error(r, 404, CW_JSONRPC_INVALID_REQUEST, "session not found");
			return;
		}
		sess_end(h, e);
		sess_put(h, e);
		r->status = 200;
		return;
	}
	cw_reply_header(r, "Allow", "POST, DELETE");
	reply_rpc_error(r, 405, CW_JSONRPC_INVALID_REQUEST,
			"method not allowed: POST messages to /mcp (this server opens no GET stream)");
}
