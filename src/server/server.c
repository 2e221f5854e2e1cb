#define _GNU_SOURCE
#include "server/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/socket.h>

#include "config/config.h"
#include "store/store.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

/* GnuTLS priority: TLS 1.3 and nothing older. A client limited to TLS 1.2
 * fails the handshake before any route can be reached. */
#define CW_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3"

struct req {
	struct strbuf body;
	int too_big;
	int rejected; /* a response was queued on the first call */
};

static enum MHD_Result send_reply(struct MHD_Connection *c, struct cw_reply *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (r->stream) {
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, r->stream, r->stream_cls,
							 r->stream_free);
		if (!resp) {
			r->stream_free(r->stream_cls);
			return MHD_NO;
		}
	} else {
		resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (char *)"",
						       r->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	}
	if (!resp) {
		free(r->body);
		return MHD_NO;
	}
	r->body = NULL;
	MHD_add_response_header(resp, "Content-Type", r->ctype ? r->ctype : "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (r->bearer_challenge)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"causeway\"");
	for (int i = 0; i < r->nhdr; i++)
		MHD_add_response_header(resp, r->hdr[i][0], r->hdr[i][1]);
	ret = MHD_queue_response(c, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Counts the Content-Length headers into *(int *)cls. */
static enum MHD_Result count_content_length(void *cls, enum MHD_ValueKind kind, const char *key,
					    const char *value)
{
	(void)kind;
	(void)value;
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
		(*(int *)cls)++;
	return MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct cw_server *s = cls;
	struct req *q = *con_cls;
	struct cw_reply r = { 0 };
	enum MHD_Result ret;
	int rc;

	if (!q) {
		const char *cl;
		int ncl = 0;

		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		strbuf_init(&q->body, s->max_body);
		*con_cls = q;
		atomic_fetch_add(&s->requests, 1);
		/* Authenticate before reading a single body byte. */
		if ((rc = cw_gate_check(s, c, method, url, &r))) {
			if (rc > 0) { /* the dashboard's sign-in link */
				q->rejected = 1;
				return send_reply(c, &r);
			}
			atomic_fetch_add(&s->rejected, 1);
			q->rejected = 1;
			cw_gate_page(c, method, url, &r);
			return send_reply(c, &r);
		}
		/* Two lengths are two readings of one body (request smuggling
		 * past a proxy that takes the other): refused, even when equal. */
		MHD_get_connection_values(c, MHD_HEADER_KIND, count_content_length, &ncl);
		if (ncl > 1) {
			q->rejected = 1;
			cw_reply_error(&r, 400, "more than one Content-Length header");
			return send_reply(c, &r);
		}
		/* Host and Origin, for every route (DNS rebinding, cross-site
		 * requests from a browser). */
		if (cw_gate_origin(s, c, &r)) {
			atomic_fetch_add(&s->rejected, 1);
			q->rejected = 1;
			return send_reply(c, &r);
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > s->max_body) {
			q->rejected = 1;
			cw_reply_error(&r, 413, "request body larger than %zu bytes", s->max_body);
			return send_reply(c, &r);
		}
		return MHD_YES;
	}
	if (q->rejected) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!q->too_big && strbuf_add(&q->body, upload, *upload_size))
			q->too_big = 1;
		*upload_size = 0;
		return MHD_YES;
	}
	/* The whole request is in: answering it is not bound by the read
	 * deadline (the per-request timeout applies). */
	cw_deadline_arm(&s->dl, c, 0);
	if (q->too_big)
		cw_reply_error(&r, 413, "request body larger than %zu bytes", s->max_body);
	else
		cw_route_dispatch(s, c, method, url, strbuf_str(&q->body), q->body.len, &r);
	if (r.status >= 500)
		atomic_fetch_add(&s->errors, 1);
	ret = send_reply(c, &r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct cw_server *s = cls;
	struct req *q = *con_cls;

	/* The next request, or the end of a kept-alive connection's idling,
	 * must come within the read deadline. */
	cw_deadline_arm(&s->dl, c, 1);
	if (q) {
		strbuf_release(&q->body);
		free(q);
		*con_cls = NULL;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	if (!cw_verbose)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	cw_debug("http: %s", msg);
}

static int read_all(const char *path, char **out, char *err, size_t errlen, const char *what)
{
	struct strbuf sb;
	char buf[4096];
	size_t n;
	FILE *f;
	int rc = 0;

	f = fopen(path, "re");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "cannot read %s \"%s\": %s", what, path, strerror(errno));
		return rc;
	}
	strbuf_init(&sb, 1 << 20);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if ((rc = strbuf_add(&sb, buf, n)))
			break;
	if (!rc && ferror(f))
		rc = -EIO;
	fclose(f);
	if (rc) {
		strbuf_release(&sb);
		snprintf(err, errlen, "cannot read %s \"%s\"%s", what, path,
			 rc == -ENOSPC ? ": larger than 1 MiB" : "");
		return rc;
	}
	*out = strbuf_detach(&sb);
	if (!*out) {
		snprintf(err, errlen, "%s \"%s\" is empty", what, path);
		return -EINVAL;
	}
	return 0;
}

static int resolve(const char *listen, struct sockaddr_storage *ss, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	const char *colon = strrchr(listen, ':');
	char host[256], tmp[300], port_s[8];
	int port, rc;

	/* Port 0 is fine for a listener (the kernel picks one), though not
	 * for an address to connect to, which is what cw_parse_hostport checks. */
	if (colon && !strcmp(colon, ":0") && (size_t)(colon - listen) < sizeof(tmp) - 3) {
		snprintf(tmp, sizeof(tmp), "%.*s:1", (int)(colon - listen), listen);
		rc = cw_parse_hostport(tmp, host, sizeof(host), &port);
		port = 0;
	} else {
		rc = cw_parse_hostport(listen, host, sizeof(host), &port);
	}
	if (rc) {
		snprintf(err, errlen, "bad listen address \"%s\" (want ADDR:PORT)", listen);
		return -EINVAL;
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	if (getaddrinfo(host, port_s, &hints, &ai) || !ai) {
		snprintf(err, errlen, "cannot resolve listen address \"%s\"", listen);
		return -EINVAL;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

int cw_server_start(struct cw_server **out, const struct cw_server_opts *o, char *err,
		    size_t errlen)
{
	struct MHD_OptionItem opts[16];
	struct sockaddr_storage ss = { 0 };
	struct cw_server *s;
	const union MHD_DaemonInfo *di;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_ERROR_LOG;
	int n = 0, rc;
	uint64_t tmo_s;

	*out = NULL;
	if ((rc = resolve(o->listen ? o->listen : CW_SERVER_DEFAULT_LISTEN, &ss, err, errlen)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->db_path = strdup(o->db_path);
	s->node = strdup(o->node);
	s->check = o->check;
	s->max_rows = o->max_rows > 0 ? o->max_rows : CW_SERVER_DEFAULT_MAX_ROWS;
	s->max_body = o->max_body ? o->max_body : CW_SERVER_DEFAULT_MAX_BODY;
	s->timeout_ns = o->timeout_ns ? o->timeout_ns : CW_SERVER_DEFAULT_TIMEOUT_NS;
	if ((rc = cw_deadlines_start(&s->dl, o->read_timeout_ns ? o->read_timeout_ns
							       : CW_SERVER_DEFAULT_READ_TIMEOUT_NS))) {
		snprintf(err, errlen, "cannot start the read-deadline thread: %s", strerror(-rc));
		goto fail;
	}
	s->started_wall_ns = cw_realtime_ns();
	if (!s->db_path || !s->node) {
		rc = -ENOMEM;
		goto fail;
	}
	if (o->token) {
		if (!*o->token) {
			snprintf(err, errlen, "the bearer token is empty");
			rc = -EINVAL;
			goto fail;
		}
		cw_token_hash(o->token, s->token_hash);
		s->has_token = 1;
	}
	/* Secure by default: a server that asks for no credential at all is
	 * only ever one its caller asked for by name. */
	if (!o->token && !(o->client_ca_file && !o->no_tls) && !o->no_auth) {
		snprintf(err, errlen, "no credential configured: give a bearer token or a client CA");
		rc = -EINVAL;
		goto fail;
	}
	s->no_auth = !o->token && !(o->client_ca_file && !o->no_tls);
	s->mcp_live_tools = o->mcp_live_tools;
	if (!o->no_tls) {
		const char *cert = o->cert_file, *key = o->key_file;
		char *gc = NULL, *gk = NULL;

		if (!cert != !key) {
			snprintf(err, errlen, "--cert and --key go together");
			rc = -EINVAL;
			goto fail;
		}
		if (!cert) {
			if ((rc = cw_tls_selfsigned(o->tls_dir, o->cert_name ? o->cert_name : o->node, &gc, &gk, err, errlen)))
				goto fail;
			cert = gc;
			key = gk;
		}
		rc = read_all(cert, &s->cert_pem, err, errlen, "certificate");
		if (!rc)
			rc = read_all(key, &s->key_pem, err, errlen, "key");
		s->cert_path = strdup(cert);
		free(gc);
		free(gk);
		if (rc)
			goto fail;
		s->tls = 1;
		flags |= MHD_USE_TLS;
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert_pem };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, s->key_pem };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
						     (void *)CW_TLS_PRIORITIES };
		if (o->client_ca_file) {
			if ((rc = read_all(o->client_ca_file, &s->ca_pem, err, errlen,
					   "client CA")))
				goto fail;
			/* MHD asks for a client certificate when a trust list is set;
			 * whether one was sent and verifies is decided in the gate. */
			opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0,
							     s->ca_pem };
			s->mtls = 1;
		}
	} else if (o->client_ca_file) {
		snprintf(err, errlen, "--client-ca needs TLS; drop --no-tls");
		rc = -EINVAL;
		goto fail;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	tmo_s = (s->timeout_ns + 999999999ULL) / 1000000000ULL + 5;
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &ss };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)tmo_s, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					     o->per_ip_limit ? o->per_ip_limit
							     : CW_SERVER_DEFAULT_PER_IP,
					     NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT,
					     o->max_connections ? o->max_connections
								: CW_SERVER_DEFAULT_MAX_CONN,
					     NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, s };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION,
					     (intptr_t)cw_deadlines_notify, &s->dl };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL };
	opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, s, MHD_OPTION_ARRAY, opts,
				MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, errlen, "cannot listen on \"%s\" (address in use, or bad TLS files)",
			 o->listen ? o->listen : CW_SERVER_DEFAULT_LISTEN);
		rc = -EADDRINUSE;
		goto fail;
	}
	di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : 0;
	/* No cache is no error: /chains then runs explain every time. */
	cw_chains_cache_start(s, 1);
	*out = s;
	return 0;
fail:
	cw_server_stop(s);
	return rc;
}

int cw_server_port(const struct cw_server *s)
{
	return s->port;
}

const char *cw_server_cert_path(const struct cw_server *s)
{
	return s->tls ? s->cert_path : NULL;
}

void cw_server_stop(struct cw_server *s)
{
	if (!s)
		return;
	/* Streams poll this and end at once rather than at their next tick. */
	atomic_store(&s->stopping, 1);
	if (s->d)
		MHD_stop_daemon(s->d);
	cw_mcp_http_free(s);
	cw_chains_cache_stop(s);
	cw_deadlines_stop(&s->dl); /* after the daemon: no connection is left */
	free(s->db_path);
	free(s->node);
	free(s->cert_path);
	free(s->cert_pem);
	if (s->key_pem) {
		explicit_bzero(s->key_pem, strlen(s->key_pem));
		free(s->key_pem);
	}
	free(s->ca_pem);
	explicit_bzero(s->token_hash, sizeof(s->token_hash));
	free(s);
}
