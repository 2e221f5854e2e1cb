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
#include "cmd/opt_error.h"
#include "cmd/otlp_setup.h"
#include "cmd/serve_setup.h"
#include "config/config.h"
#include "server/server.h"
#include "store/store.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/timeutil.h"

static void usage(FILE *f)
{
	fputs("usage: causeway serve [--listen ADDR:PORT] [--db PATH] [--cert FILE --key FILE]\n"
	      "                      [--client-ca FILE] [--token-file FILE] [--no-tls] [--no-auth]\n"
	      "                      [--max-rows N] [--max-body BYTES] [--timeout DURATION]\n"
	      "                      [--read-timeout DURATION] [--per-ip N] [--tls-dir DIR]\n"
	      "                      [--otlp URL]\n\n"
	      "Serves a read-only JSON API (/api/v1/...), the dashboard and /metrics over\n"
	      "HTTPS (TLS 1.3 only). See docs/api.md.\n\n"
	      "  --listen ADDR:PORT  address to bind (default " CW_SERVER_DEFAULT_LISTEN
	      ", or the config's\n"
	      "                      server.listen); port 0 picks a free port\n"
	      "  -d, --db PATH       database to serve (default ./causeway.db or store.path)\n"
	      "  --cert, --key FILE  server certificate and key (PEM); without them an ECDSA\n"
	      "                      P-256 self-signed pair is generated once in --tls-dir\n"
	      "  --tls-dir DIR       where the generated pair lives (default ~/.causeway/tls)\n"
	      "  --client-ca FILE    require client certificates signed by this CA (mutual TLS)\n"
	      "  --token-file FILE   require \"Authorization: Bearer <token>\"; the token is the\n"
	      "                      file's first line (or $CW_TOKEN); never given on the command line.\n"
	      "                      Without a token or --client-ca, one is generated into\n"
	      "                      ~/.causeway/token (0600, reused on restart), where explain and\n"
	      "                      query --nodes find it\n"
	      "  --no-auth           require no credential at all (loopback addresses only; warned)\n"
	      "  --no-tls            plain HTTP (warns unless bound to loopback)\n"
	      "  --max-rows N        row cap for /api/v1/query (default 10000)\n"
	      "  --max-body BYTES    request body cap (default 65536)\n"
	      "  --timeout DURATION  per-request time limit (default 10s)\n"
	      "  --read-timeout DURATION\n"
	      "                      a whole request must arrive within this time of the\n"
	      "                      connection opening or of the previous answer, else the\n"
	      "                      connection is closed (default 10s)\n"
	      "  --per-ip N          concurrent connections per client address (default 16)\n"
	      "  --otlp URL          also export metrics and new chains to an OTLP/HTTP\n"
	      "                      receiver (config otlp.*; docs/otlp.md)\n"
	      "\n"
	      "examples:\n"
	      "  causeway serve --db causeway.db\n"
	      "  causeway serve --listen 0.0.0.0:8443 --cert server.crt --key server.key\n",
	      f);
}

int cmd_serve(int argc, char **argv)
{
	enum { O_CERT = 256, O_KEY, O_CA, O_TOKEN, O_NOTLS, O_NOAUTH, O_ROWS, O_BODY, O_TMO, O_RTMO, O_PERIP, O_DIR,
	       O_OTLP };
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "db", required_argument, NULL, 'd' },
		{ "cert", required_argument, NULL, O_CERT },
		{ "key", required_argument, NULL, O_KEY },
		{ "client-ca", required_argument, NULL, O_CA },
		{ "token-file", required_argument, NULL, O_TOKEN },
		{ "no-tls", no_argument, NULL, O_NOTLS },
		{ "no-auth", no_argument, NULL, O_NOAUTH },
		{ "max-rows", required_argument, NULL, O_ROWS },
		{ "max-body", required_argument, NULL, O_BODY },
		{ "timeout", required_argument, NULL, O_TMO },
		{ "read-timeout", required_argument, NULL, O_RTMO },
		{ "per-ip", required_argument, NULL, O_PERIP },
		{ "tls-dir", required_argument, NULL, O_DIR },
		{ "otlp", required_argument, NULL, O_OTLP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct serve_setup ss;
	struct cw_server_opts *o = &ss.o;
	struct cw_server *srv = NULL;
	struct cw_otlp *otlp = NULL;
	const char *otlp_url = NULL;
	struct cw_store *st;
	char err[1024], shown[CW_SHOWN_BUF];
	uint64_t n;
	sigset_t set;
	int c, rc, sig;

	memset(&ss, 0, sizeof(ss));
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, "+:d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			o->listen = optarg;
			break;
		case 'd':
			o->db_path = optarg;
			break;
		case O_CERT:
			o->cert_file = optarg;
			break;
		case O_KEY:
			o->key_file = optarg;
			break;
		case O_CA:
			o->client_ca_file = optarg;
			break;
		case O_TOKEN:
			ss.token_file = optarg;
			break;
		case O_NOTLS:
			o->no_tls = 1;
			break;
		case O_NOAUTH:
			o->no_auth = 1;
			break;
		case O_ROWS:
			if (cw_parse_uint(optarg, 1, INT64_MAX, &n)) {
				cw_err("serve: invalid --max-rows \"%s\" (1 or more)", cw_shown(optarg, shown));
				return CW_EXIT_USAGE;
			}
			o->max_rows = (int64_t)n;
			break;
		case O_BODY:
			if (cw_parse_uint(optarg, 16, 64 << 20, &n)) {
				cw_err("serve: invalid --max-body \"%s\" (16 to 67108864 bytes)",
				       cw_shown(optarg, shown));
				return CW_EXIT_USAGE;
			}
			o->max_body = (size_t)n;
			break;
		case O_TMO:
			if (cw_parse_duration(optarg, &o->timeout_ns) || !o->timeout_ns) {
				cw_err("serve: invalid --timeout \"%s\" (e.g. 5s, 500ms)", cw_shown(optarg, shown));
				return CW_EXIT_USAGE;
			}
			break;
		case O_RTMO:
			if (cw_parse_duration(optarg, &o->read_timeout_ns) || !o->read_timeout_ns) {
				cw_err("serve: invalid --read-timeout \"%s\" (e.g. 10s, 500ms)",
				       cw_shown(optarg, shown));
				return CW_EXIT_USAGE;
			}
			break;
		case O_PERIP:
			if (cw_parse_uint(optarg, 1, 65535, &n)) {
				cw_err("serve: invalid --per-ip \"%s\" (1 to 65535)", cw_shown(optarg, shown));
				return CW_EXIT_USAGE;
			}
			o->per_ip_limit = (unsigned)n;
			break;
		case O_DIR:
			ss.tls_dir = optarg;
			break;
		case O_OTLP:
			otlp_url = optarg;
			break;
		case 'h':
			usage(stdout);
			return CW_EXIT_OK;
		default:
			return cw_opt_error(0, "serve", c, argv);
		}
	}
	if (optind < argc)
		return cw_opt_unexpected(0, "serve", argv[optind]);
	ss.tls_flags = o->cert_file || o->key_file || o->client_ca_file;
	rc = serve_setup_resolve(&ss, "serve");
	if (rc)
		goto out;
	rc = cw_store_open(&st, o->db_path, CW_STORE_READONLY, err, sizeof(err));
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

	rc = serve_setup_start(&ss, "serve", &srv);
	if (rc)
		goto out;
	rc = otlp_setup_start(otlp_url, o->db_path, NULL, "serve", 0, &otlp);
	if (rc)
		goto out;
	while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
		; /* nothing to reload yet; stay up */
	rc = CW_EXIT_OK;
out:
	cw_server_stop(srv);
	otlp_setup_stop(otlp, "serve", 0);
	serve_setup_release(&ss);
	return rc;
}
