/* causeway serve: the HTTPS API (docs/api.md) over one database. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "config/config.h"
#include "server/server.h"
#include "store/store.h"
#include "util/log.h"
#include "util/timeutil.h"

static void usage(FILE *f)
{
	fputs("usage: causeway serve [--listen ADDR:PORT] [--db PATH] [--cert FILE --key FILE]\n"
	      "                      [--client-ca FILE] [--token-file FILE] [--no-tls]\n"
	      "                      [--max-rows N] [--max-body BYTES] [--timeout DURATION]\n"
	      "                      [--per-ip N] [--tls-dir DIR]\n\n"
	      "Serves a read-only JSON API (/api/v1/...), the dashboard and /metrics over\n"
	      "HTTPS (TLS 1.3 only). See docs/api.md.\n\n"
	      "  --listen ADDR:PORT  address to bind (default " CW_SERVER_DEFAULT_LISTEN
	      ", or the config's\n"
	      "                      server.listen); port 0 picks a free port\n"
	      "  --db PATH           database to serve (default ./causeway.db or store.path)\n"
	      "  --cert, --key FILE  server certificate and key (PEM); without them an ECDSA\n"
	      "                      P-256 self-signed pair is generated once in --tls-dir\n"
	      "  --tls-dir DIR       where the generated pair lives (default ~/.causeway/tls)\n"
	      "  --client-ca FILE    require client certificates signed by this CA (mutual TLS)\n"
	      "  --token-file FILE   require \"Authorization: Bearer <token>\"; the token is the\n"
	      "                      file's first line (or $CW_TOKEN); never given on the command line\n"
	      "  --no-tls            plain HTTP (warns unless bound to loopback)\n"
	      "  --max-rows N        row cap for /api/v1/query (default 10000)\n"
	      "  --max-body BYTES    request body cap (default 65536)\n"
	      "  --timeout DURATION  per-request time limit (default 10s)\n"
	      "  --per-ip N          concurrent connections per client address (default 16)\n",
	      f);
}

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

static int parse_count(const char *s, long long min, long long max, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno || end == s || *end || *out < min || *out > max ? -EINVAL : 0;
}

int cmd_serve(int argc, char **argv)
{
	enum { O_CERT = 256, O_KEY, O_CA, O_TOKEN, O_NOTLS, O_ROWS, O_BODY, O_TMO, O_PERIP, O_DIR };
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "db", required_argument, NULL, 'd' },
		{ "cert", required_argument, NULL, O_CERT },
		{ "key", required_argument, NULL, O_KEY },
		{ "client-ca", required_argument, NULL, O_CA },
		{ "token-file", required_argument, NULL, O_TOKEN },
		{ "no-tls", no_argument, NULL, O_NOTLS },
		{ "max-rows", required_argument, NULL, O_ROWS },
		{ "max-body", required_argument, NULL, O_BODY },
		{ "timeout", required_argument, NULL, O_TMO },
		{ "per-ip", required_argument, NULL, O_PERIP },
		{ "tls-dir", required_argument, NULL, O_DIR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cw_config *cfg;
	struct cw_server_opts o = { 0 };
	struct cw_server *srv = NULL;
	struct cw_store *st;
	const char *token_file = NULL, *tls_dir = NULL;
	char err[1024], dirbuf[PATH_MAX], *token = NULL;
	long long n;
	sigset_t set;
	int c, rc, sig, tls_flags;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			o.listen = optarg;
			break;
		case 'd':
			o.db_path = optarg;
			break;
		case O_CERT:
			o.cert_file = optarg;
			break;
		case O_KEY:
			o.key_file = optarg;
			break;
		case O_CA:
			o.client_ca_file = optarg;
			break;
		case O_TOKEN:
			token_file = optarg;
			break;
		case O_NOTLS:
			o.no_tls = 1;
			break;
		case O_ROWS:
			if (parse_count(optarg, 1, INT64_MAX, &n)) {
				cw_err("serve: invalid --max-rows \"%s\"", optarg);
				return CW_EXIT_USAGE;
			}
			o.max_rows = n;
			break;
		case O_BODY:
			if (parse_count(optarg, 16, 64 << 20, &n)) {
				cw_err("serve: invalid --max-body \"%s\" (16 to 67108864 bytes)", optarg);
				return CW_EXIT_USAGE;
			}
			o.max_body = (size_t)n;
			break;
		case O_TMO:
			if (cw_parse_duration(optarg, &o.timeout_ns) || !o.timeout_ns) {
				cw_err("serve: invalid --timeout \"%s\" (e.g. 5s, 500ms)", optarg);
				return CW_EXIT_USAGE;
			}
			break;
		case O_PERIP:
			if (parse_count(optarg, 1, 65535, &n)) {
				cw_err("serve: invalid --per-ip \"%s\"", optarg);
				return CW_EXIT_USAGE;
			}
			o.per_ip_limit = (unsigned)n;
			break;
		case O_DIR:
			tls_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return CW_EXIT_OK;
		case ':':
			cw_err("serve: option \"%s\" needs a value", argv[optind - 1]);
			return CW_EXIT_USAGE;
		default:
			cw_err("serve: unknown option \"%s\"", argv[optind - 1]);
			return CW_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cw_err("serve: unexpected argument \"%s\"", argv[optind]);
		return CW_EXIT_USAGE;
	}
	if ((rc = cw_config_get(&cfg, err, sizeof(err)))) {
		cw_err("%s", err);
		return CW_EXIT_USAGE;
	}
	/* Flags win over the config file, which wins over built-in defaults. */
	if (!o.listen)
		o.listen = cfg->server_listen ? cfg->server_listen : CW_SERVER_DEFAULT_LISTEN;
	if (!o.db_path)
		o.db_path = cfg->store_path ? cfg->store_path : CW_DEFAULT_DB;
	tls_flags = o.cert_file || o.key_file || o.client_ca_file;
	if (!o.cert_file && !o.key_file) {
		o.cert_file = cfg->tls_cert;
		o.key_file = cfg->tls_key;
	}
	if (!o.client_ca_file)
		o.client_ca_file = cfg->tls_client_ca;
	if (!o.max_rows)
		o.max_rows = cfg->server_max_rows;
	if (!o.timeout_ns)
		o.timeout_ns = cfg->server_timeout_ns;
	o.node = cw_node_name(cfg);
	if (o.no_tls && tls_flags) {
		cw_err("serve: --no-tls cannot be combined with --cert, --key or --client-ca");
		return CW_EXIT_USAGE;
	}
	if (o.no_tls) /* the config's TLS paths do not apply */
		o.cert_file = o.key_file = o.client_ca_file = NULL;
	if (!o.cert_file != !o.key_file) {
		cw_err("serve: --cert and --key go together");
		return CW_EXIT_USAGE;
	}

	/* The token never comes from argv (it would show in ps and shell
	 * history): a file, the environment, or the config's file. */
	if (!token_file && getenv("CW_TOKEN") && *getenv("CW_TOKEN")) {
		token = strdup(getenv("CW_TOKEN"));
	} else {
		if (!token_file)
			token_file = cfg->server_token_file;
		if (token_file && !(token = cw_token_read_file(token_file, err, sizeof(err)))) {
			cw_err("serve: %s", err);
			return CW_EXIT_USAGE;
		}
	}
	o.token = token;

	if (!o.no_tls && !o.cert_file) {
		const char *home = getenv("HOME");

		if (!tls_dir && home && *home) {
			snprintf(dirbuf, sizeof(dirbuf), "%s/.causeway/tls", home);
			tls_dir = dirbuf;
		} else if (!tls_dir) {
			/* No home (a system service): next to the database. */
			const char *slash = strrchr(o.db_path, '/');

			snprintf(dirbuf, sizeof(dirbuf), "%.*s/causeway-tls",
				 slash ? (int)(slash - o.db_path) : 1, slash ? o.db_path : ".");
			tls_dir = dirbuf;
		}
		o.tls_dir = tls_dir;
	}

	rc = cw_store_open(&st, o.db_path, CW_STORE_READONLY, err, sizeof(err));
	if (rc) {
		cw_err("serve: %s", err);
		rc = CW_EXIT_DB;
		goto out;
	}
	cw_store_close(st);

	/* Block the stop signals before the server threads start so that they
	 * inherit the mask and only sigwait below sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (o.no_tls && !is_loopback(o.listen))
		cw_warn("serving plain HTTP on \"%s\": anyone on the network can read the "
			"traces; use TLS unless this is a trusted network",
			o.listen);
	rc = cw_server_start(&srv, &o, err, sizeof(err));
	if (rc) {
		cw_err("serve: %s", err);
		rc = rc == -EINVAL ? CW_EXIT_USAGE : CW_EXIT_FAIL;
		goto out;
	}
	{
		char shown[300];
		const char *colon = strrchr(o.listen, ':');

		snprintf(shown, sizeof(shown), "%.*s:%d", colon ? (int)(colon - o.listen) : 0,
			 o.listen, cw_server_port(srv));
		fprintf(stderr, "causeway: serving %s://%s for node \"%s\" from \"%s\"%s%s\n",
			o.no_tls ? "http" : "https", shown, o.node, o.db_path,
			o.client_ca_file ? ", client certificates required" : "",
			token ? ", bearer token required" : "");
		if (cw_server_cert_path(srv))
			fprintf(stderr, "causeway: certificate \"%s\"\n", cw_server_cert_path(srv));
		fflush(stderr);
	}
	while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
		; /* nothing to reload yet; stay up */
	rc = CW_EXIT_OK;
out:
	cw_server_stop(srv);
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	return rc;
}
