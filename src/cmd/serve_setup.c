/* serve_setup: server options for `serve` and `trace --serve`. */
#define _GNU_SOURCE
#include "cmd/serve_setup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "config/config.h"
#include "util/log.h"

static int is_loopback(const char *listen)
{
	char host[256];
	unsigned char a[16];
	int port;

	if (cw_parse_hostport(listen, host, sizeof(host), &port)) {
		/* port 0 */
		const char *colon = strrchr(listen, ':');

		if (!colon || (size_t)(colon - listen) >= sizeof(host))
			return 0;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			memmove(host, host + 1, strlen(host));
			host[strlen(host) - 1] = 0;
		}
	}
	if (!strcmp(host, "localhost"))
		return 1;
	if (inet_pton(AF_INET, host, a) == 1)
		return a[0] == 127;
	if (inet_pton(AF_INET6, host, a) == 1)
		return !memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16);
	return 0;
}

int serve_setup_resolve(struct serve_setup *s, const char *who)
{
	struct cw_server_opts *o = &s->o;
	const struct cw_config *cfg;
	char err[1024];
	int rc;

	if ((rc = cw_config_get(&cfg, err, sizeof(err)))) {
		cw_err("%s", err);
		return CW_EXIT_USAGE;
	}
	/* Flags win over the config file, which wins over built-in defaults. */
	if (!o->listen)
		o->listen = cfg->server_listen ? cfg->server_listen : CW_SERVER_DEFAULT_LISTEN;
	if (!o->db_path)
		o->db_path = cw_default_db();
	if (!o->cert_file && !o->key_file) {
		o->cert_file = cfg->tls_cert;
		o->key_file = cfg->tls_key;
	}
	if (!o->client_ca_file)
		o->client_ca_file = cfg->tls_client_ca;
	if (!o->max_rows)
		o->max_rows = cfg->server_max_rows;
	if (!o->timeout_ns)
		o->timeout_ns = cfg->server_timeout_ns;
	if (!o->read_timeout_ns)
		o->read_timeout_ns = cfg->server_read_timeout_ns;
	/* A file of other nodes (copied, merged) is labelled with its
	 * nodes, not this host's name, unless --node or the config says. */
	o->node = cw_reader_node(o->db_path, s->node_label, sizeof(s->node_label));
	o->cert_name = cw_default_node(); /* the host's certificate names the host */
	cw_check_env_default(&o->check);
	if (o->no_tls && s->tls_flags) {
		cw_err("%s: --no-tls cannot be combined with --cert, --key or --client-ca", who);
		return CW_EXIT_USAGE;
	}
	if (o->no_tls) /* the config's TLS paths do not apply */
		o->cert_file = o->key_file = o->client_ca_file = NULL;
	if (!o->cert_file != !o->key_file) {
		cw_err("%s: --cert and --key go together", who);
		return CW_EXIT_USAGE;
	}

	/* The token never comes from argv (it would show in ps and shell
	 * history): a file, the environment, or the config's file. */
	if (!s->token_file && getenv("CW_TOKEN") && *getenv("CW_TOKEN")) {
		s->token = strdup(getenv("CW_TOKEN"));
	} else {
		if (!s->token_file)
			s->token_file = cfg->server_token_file;
		if (s->token_file && !(s->token = cw_token_read_file(s->token_file, err, sizeof(err)))) {
			cw_err("%s: %s", who, err);
			return CW_EXIT_USAGE;
		}
	}
	o->token = s->token;
	if (!o->no_auth)
		o->no_auth = (int)cfg->server_no_auth;
	o->mcp_live_tools = (int)cfg->server_mcp_live_tools;
	if (o->no_auth) {
		if (s->token || o->client_ca_file) {
			cw_err("%s: --no-auth (or server.no_auth) cannot be combined with a token or a client CA",
			       who);
			return CW_EXIT_USAGE;
		}
		if (!is_loopback(o->listen)) {
			cw_err("%s: --no-auth is refused on \"%s\": without a credential only a loopback address "
			       "(127.0.0.1, ::1, localhost) may be served", who, o->listen);
			return CW_EXIT_USAGE;
		}
	} else if (!s->token && !o->client_ca_file) {
		/* Secure by default: no token and no client CA configured, so
		 * one is made (or the one made before is reused). */
		int created;

		if (cw_token_default_path(o->db_path, s->token_path, sizeof(s->token_path))) {
			cw_err("%s: no place for a generated token file; give --token-file or --client-ca", who);
			return CW_EXIT_USAGE;
		}
		s->token = cw_token_load_or_create(s->token_path, &created, err, sizeof(err));
		if (!s->token) {
			cw_err("%s: %s (or give --token-file, $CW_TOKEN or --client-ca)", who, err);
			return CW_EXIT_FAIL;
		}
		s->token_state = created ? 2 : 1;
		o->token = s->token;
	}

	if (!o->no_tls && !o->cert_file) {
		const char *home = getenv("HOME");

		if (!s->tls_dir && home && *home) {
			snprintf(s->dirbuf, sizeof(s->dirbuf), "%s/.causeway/tls", home);
			s->tls_dir = s->dirbuf;
		} else if (!s->tls_dir) {
			/* No home (a system service): next to the database. */
			const char *slash = strrchr(o->db_path, '/');

			snprintf(s->dirbuf, sizeof(s->dirbuf), "%.*s/causeway-tls",
				 slash ? (int)(slash - o->db_path) : 1, slash ? o->db_path : ".");
			s->tls_dir = s->dirbuf;
		}
		o->tls_dir = s->tls_dir;
	}
	return 0;
}

int serve_setup_start(struct serve_setup *s, const char *who, struct cw_server **out)
{
	const struct cw_server_opts *o = &s->o;
	char err[1024], shown[300];
	const char *colon = strrchr(o->listen, ':');
	int rc;

	if (o->no_tls && !is_loopback(o->listen))
		cw_warn("serving plain HTTP on \"%s\": anyone on the network can read the "
			"traces; use TLS unless this is a trusted network",
			o->listen);
	rc = cw_server_start(out, o, err, sizeof(err));
	if (rc) {
		cw_err("%s: %s", who, err);
		return rc == -EINVAL ? CW_EXIT_USAGE : CW_EXIT_FAIL;
	}
	snprintf(shown, sizeof(shown), "%.*s:%d", colon ? (int)(colon - o->listen) : 0, o->listen,
		 cw_server_port(*out));
	fprintf(stderr, "causeway: serving %s://%s for node \"%s\" from \"%s\"%s%s\n", o->no_tls ? "http" : "https",
		shown, o->node, o->db_path, o->client_ca_file ? ", client certificates required" : "",
		s->token ? ", bearer token required" : "");
	if (cw_server_cert_path(*out))
		fprintf(stderr, "causeway: certificate \"%s\"\n", cw_server_cert_path(*out));
	if (s->token_state) {
		/* Where the token is and how to use it; never the token itself
		 * (stderr ends up in logs that others read). */
		fprintf(stderr,
			"causeway: bearer token %s \"%s\" (mode 0600); clients send it as\n"
			"causeway:   curl -H \"Authorization: Bearer $(cat %s)\" %s://%s/api/v1/health%s\n"
			"causeway:   explain/query --nodes and the fleet client read that file themselves;\n"
			"causeway:   a browser opens %s://%s/?token=<the token> once (it keeps a cookie)\n",
			s->token_state == 2 ? "generated in" : "in", s->token_path, s->token_path,
			o->no_tls ? "http" : "https", shown, o->no_tls ? "" : " --cacert <certificate>",
			o->no_tls ? "http" : "https", shown);
	}
	if (o->no_auth)
		cw_warn("--no-auth: NO CREDENTIAL IS REQUIRED on \"%s\": every local user can read every trace, "
			"call the MCP tools and run queries; use only on a single-user machine you trust", shown);
	fflush(stderr);
	return 0;
}

void serve_setup_release(struct serve_setup *s)
{
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
		s->token = NULL;
	}
}
