/* The one authentication gate. Every request, whatever its route (and
 * including routes that do not exist, so the API's shape is not probeable),
 * passes here before anything else runs. */
#define _GNU_SOURCE
#include "server/internal.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "util/log.h"
#include "util/strbuf.h"


int cw_token_hash(const char *tok, uint8_t out[32])
{
	return gnutls_hash_fast(GNUTLS_DIG_SHA256, tok, strlen(tok), out) < 0 ? -EIO : 0;
}

/* 1 when got matches the token hashed in want_hash. Comparing SHA-256
 * digests makes the time independent of both the content and the length of
 * what the client sent. */
static int cw_token_equal_hashed(const uint8_t want_hash[32], const char *got)
{
	uint8_t h[32];
	unsigned diff = 0;
	int i;

	if (cw_token_hash(got, h))
		return 0;
	for (i = 0; i < 32; i++)
		diff |= (unsigned)(h[i] ^ want_hash[i]);
	explicit_bzero(h, sizeof(h));
	return diff == 0;
}

/* Why a verified-but-refused certificate was refused, most telling first:
 * GNUTLS_CERT_INVALID accompanies every one of these bits. */
static const struct {
	unsigned bits;
	const char *why;
} cert_reasons[] = {
	{ GNUTLS_CERT_SIGNER_NOT_FOUND | GNUTLS_CERT_SIGNER_NOT_CA,
	  "not signed by the trusted client CA" },
	{ GNUTLS_CERT_EXPIRED, "expired" },
	{ GNUTLS_CERT_NOT_ACTIVATED, "not yet valid" },
	{ GNUTLS_CERT_PURPOSE_MISMATCH,
	  "its extended key usage does not allow client authentication" },
	{ GNUTLS_CERT_REVOKED, "revoked" },
};

static int check_peer(struct MHD_Connection *c, char *why, size_t whylen)
{
	/* The purpose is what makes this a client check: without it, GnuTLS
	 * (3.7) accepts a CA-signed certificate issued for anything, such as
	 * a node's serverAuth-only certificate or a code-signing one. With it,
	 * a certificate that carries an extended key usage extension must list
	 * clientAuth (or anyExtendedKeyUsage); one without the extension is
	 * not restricted, as RFC 5280 4.2.1.12 reads. */
	gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
					  .data = (void *)GNUTLS_KP_TLS_WWW_CLIENT };
	const union MHD_ConnectionInfo *ci;
	gnutls_session_t sess;
	unsigned status = 0;
	size_t i;
	int rc;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session) {
		snprintf(why, whylen, "client certificate required");
		return -EACCES;
	}
	sess = (gnutls_session_t)ci->tls_session;
	if (gnutls_certificate_type_get(sess) != GNUTLS_CRT_X509) {
		snprintf(why, whylen, "client certificate must be X.509");
		return -EACCES;
	}
	/* No hostname: a client certificate names a user or host, not the
	 * address it connects from. Checks the chain against the configured
	 * client CA, the validity period of every certificate in it (now, by
	 * this host's clock) and the leaf's key usage and purpose. */
	rc = gnutls_certificate_verify_peers(sess, &purpose, 1, &status);
	if (rc == GNUTLS_E_NO_CERTIFICATE_FOUND) {
		snprintf(why, whylen, "client certificate required");
		return -EACCES;
	}
	if (rc < 0) {
		snprintf(why, whylen, "client certificate rejected: %s", gnutls_strerror(rc));
		return -EACCES;
	}
	if (status) {
		snprintf(why, whylen, "client certificate rejected: invalid (status 0x%x)", status);
		for (i = 0; i < sizeof(cert_reasons) / sizeof(cert_reasons[0]); i++)
			if (status & cert_reasons[i].bits) {
				snprintf(why, whylen, "client certificate rejected: %s",
					 cert_reasons[i].why);
				break;
			}
		return -EACCES;
	}
	return 0;
}

static int loopback_name(const char *host, size_t n)
{
	static const char *const names[] = { "localhost", "127.0.0.1", "[::1]", "::1", NULL };

	for (int i = 0; names[i]; i++)
		if (strlen(names[i]) == n && !strncasecmp(host, names[i], n))
			return 1;
	/* The rest of 127.0.0.0/8. */
	return n > 4 && !strncmp(host, "127.", 4) && strspn(host, "0123456789.") == n;
}

/* The host part of "host[:port]" or "[v6]:port". */
static size_t host_len(const char *h)
{
	if (*h == '[') {
		const char *e = strchr(h, ']');

		return e ? (size_t)(e - h + 1) : strlen(h);
	}
	return strcspn(h, ":/");
}

static int local_is_loopback(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!ci || getsockname(ci->connect_fd, (struct sockaddr *)&ss, &sl))
		return 0;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/* 0, or -EACCES with the reason: a browser page from another origin (the
 * Origin header) or a rebinding DNS name pointing at loopback (Host). A
 * page of another site must not reach a server on 127.0.0.1 through the
 * user's browser, nor make it run a query (CSRF). */
int cw_origin_check(const char *origin, const char *host, int loopback, char *why, size_t whylen)
{
	if (origin && strcmp(origin, "null")) {
		const char *p = strstr(origin, "://");

		p = p ? p + 3 : origin;
		/* The page this server served itself (the dashboard on a
		 * network address) is the same origin: scheme://Host. */
		if (!(host && !strcasecmp(p, host)) && !loopback_name(p, host_len(p))) {
			snprintf(why, whylen, "origin \"%.100s\" is not allowed", origin);
			return -EACCES;
		}
	} else if (origin) {
		snprintf(why, whylen, "origin \"null\" is not allowed");
		return -EACCES;
	}
	if (loopback && host && !loopback_name(host, host_len(host))) {
		snprintf(why, whylen, "host \"%.100s\" is not allowed on a loopback listener", host);
		return -EACCES;
	}
	return 0;
}

int cw_gate_origin(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	char reason[256];

	/* Host is checked only while the gate is open: with a client
	 * certificate or a token a rebinding page has no credential (the
	 * cookie belongs to the name the token was given to), and fleet tools
	 * reach agents by many names. */
	if (cw_origin_check(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"),
			    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
			    s->no_auth && local_is_loopback(c), reason, sizeof(reason))) {
		cw_reply_error(r, 403, "%s", reason);
		return -EACCES;
	}
	return 0;
}

/* A page a browser opens (the dashboard), not an API whose clients parse
 * JSON. */
static int is_page(const char *url)
{
	return strncmp(url, "/api/", 5) && strcmp(url, "/mcp") && strcmp(url, "/metrics");
}

/* The browser's credential: a cookie per port (cookies ignore ports, and
 * two servers on one host have two tokens). */
static void cookie_name(struct cw_server *s, char *buf, size_t len)
{
	snprintf(buf, len, "causeway_token_%d", s->port);
}

/* A browser cannot send a header when it opens a page: GET /?token=T (a
 * page, not the API) with the right token answers 303 to the same page
 * without it, setting the token as an HttpOnly, SameSite=Strict cookie, as
 * Jupyter's login link does. 1 when r holds that answer. */
static int cookie_login(struct cw_server *s, struct MHD_Connection *c, const char *method, const char *url,
			struct cw_reply *r)
{
	const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	char name[48], v[160];

	if (!t || strcmp(method, "GET") || !is_page(url) || !cw_token_equal_hashed(s->token_hash, t) ||
	    strlen(t) > 100)
		return 0;
	cookie_name(s, name, sizeof(name));
	r->status = 303;
	r->ctype = "text/plain; charset=utf-8";
	r->body = strdup("signed in\n");
	r->len = r->body ? strlen(r->body) : 0;
	cw_reply_header(r, "Location", url[0] == '/' && url[1] != '/' ? url : "/");
	snprintf(v, sizeof(v), "%s=%s; Path=/; HttpOnly; SameSite=Strict%s", name, t, s->tls ? "; Secure" : "");
	cw_reply_header(r, "Set-Cookie", v);
	explicit_bzero(v, sizeof(v));
	return 1;
}

int cw_gate_check(struct cw_server *s, struct MHD_Connection *c, const char *method, const char *url,
		  struct cw_reply *r)
{
	char why[256];

	if (s->mtls && check_peer(c, why, sizeof(why))) {
		cw_reply_error(r, 403, "%s", why);
		return -EACCES;
	}
	if (s->has_token) {
		const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							    MHD_HTTP_HEADER_AUTHORIZATION);
		const char *ck;
		char name[48];

		if (!h) {
			cookie_name(s, name, sizeof(name));
			ck = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, name);
			if (ck && cw_token_equal_hashed(s->token_hash, ck))
				return 0;
			if (cookie_login(s, c, method, url, r))
				return 1;
		}
		if (!h || strncasecmp(h, "Bearer ", 7)) {
			cw_reply_error(r, 401, "bearer token required");
			r->bearer_challenge = 1;
			return -EACCES;
		}
		h += 7;
		while (*h == ' ')
			h++;
		if (!cw_token_equal_hashed(s->token_hash, h)) {
			cw_reply_error(r, 401, "bearer token rejected");
			r->bearer_challenge = 1;
			return -EACCES;
		}
	}
	return 0;
}

/* A browser that opens the dashboard with a refused (or no) client
 * certificate gets the same status and reason as a page it can read, rather
 * than a bare JSON line: only for a GET of a page (not /api, /mcp or
 * /metrics, whose clients parse the JSON) that accepts text/html. */
void cw_gate_page(struct MHD_Connection *c, const char *method, const char *url, struct cw_reply *r)
{
	static const char head[] =
		"<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>causeway: access refused</title>"
		"<style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem}"
		"h1{color:#c62828;font-size:1.4rem}code{background:#eef1f5;padding:0 .3rem}</style>";
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	json_t *j;
	const char *msg, *title, *hint;
	struct strbuf b;
	int rc = 0;

	if (strcmp(method, "GET") || !accept || !strstr(accept, "text/html") || !is_page(url) || !r->body)
		return;
	j = json_loadb(r->body, r->len, 0, NULL);
	msg = json_string_value(json_object_get(j, "error"));
	if (!msg) {
		json_decref(j);
		return;
	}
	if (r->status == 403) {
		title = "Client certificate refused";
		hint = "This server admits only browsers that present a client certificate signed by the CA "
		       "given to <code>serve --client-ca</code>, with the clientAuth purpose. Import one into "
		       "the browser (or its certificate store) and reload.";
	} else {
		title = "Bearer token required";
		hint = "This server requires a bearer token. Open this page once as <code>/?token=</code> "
		       "followed by the token (the file <code>serve</code> named when it started, by default "
		       "<code>~/.causeway/token</code>); the browser then keeps it as a cookie for this "
		       "server. Or serve the dashboard behind mutual TLS.";
	}
	strbuf_init(&b, 8192);
	rc |= strbuf_add(&b, head, sizeof(head) - 1);
	rc |= strbuf_addf(&b, "<h1>%s</h1><p>The server answered: <strong>", title);
	for (const char *p = msg; *p; p++) {
		if (*p == '<')
			rc |= strbuf_adds(&b, "&lt;");
		else if (*p == '>')
			rc |= strbuf_adds(&b, "&gt;");
		else if (*p == '&')
			rc |= strbuf_adds(&b, "&amp;");
		else
			rc |= strbuf_addch(&b, *p);
	}
	rc |= strbuf_addf(&b, "</strong> (HTTP %d).</p><p>%s</p><p>Details: docs/api.md, Mutual TLS.</p></html>\n",
		    r->status, hint);
	json_decref(j);
	if (rc) {
		strbuf_release(&b);
		return;
	}
	free(r->body);
	r->len = b.len;
	r->body = strbuf_detach(&b);
	r->ctype = "text/html; charset=utf-8";
}

char *cw_token_read_file(const char *path, char *err, size_t errlen)
{
	char buf[4097], *s, *e;
	size_t n;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "cannot read token file \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	s = buf;
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	e = s + strcspn(s, "\r\n");
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = 0;
	if (!*s) {
		snprintf(err, errlen, "token file \"%s\" is empty", path);
		explicit_bzero(buf, sizeof(buf));
		return NULL;
	}
	s = strdup(s);
	explicit_bzero(buf, sizeof(buf));
	if (!s)
		snprintf(err, errlen, "out of memory");
	return s;
}
