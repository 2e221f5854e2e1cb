/* causeway mcp: the MCP server over stdio (docs/mcp.md). Newline-delimited
 * JSON-RPC 2.0: one message per line in, one per line out; nothing but
 * protocol on stdout, diagnostics on stderr. The dispatcher is src/mcp/;
 * this file is flags, the line reader and the writer.
 *
 * Tool calls run on their own threads so that a ping or a cancellation
 * sent while a long call runs is still read and acted on. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/fleet_cli.h"
#include "cmd/opt_error.h"
#include "mcp/mcp.h"
#include "store/store.h"
#include "util/log.h"
#include "util/strbuf.h"

/* The tools as the server lists them, wrapped at 76 columns: the help
 * cannot name fewer than there are. */
static void print_tools(FILE *f)
{
	size_t n, col = 6;
	const struct cw_mcp_tool *t = cw_mcp_tools(&n);

	fputs("Tools:", f);
	for (size_t i = 0; i < n; i++) {
		size_t w = strlen(t[i].name) + 1; /* and its comma or full stop */

		if (col + 1 + w > 76) {
			fputs("\n ", f);
			col = 1;
		}
		fprintf(f, " %s%s", t[i].name, i + 1 < n ? "," : ".");
		col += 1 + w;
	}
	fprintf(f, " (%zu)\n", n);
}

static void usage(FILE *f)
{
	fputs("usage: causeway mcp [--db PATH] [--nodes HOST:PORT,... | --fleet] [fleet TLS flags]\n"
	      "\n"
	      "Serves causeway to AI assistants over the Model Context Protocol on\n"
	      "stdin/stdout (newline-delimited JSON-RPC 2.0), for clients such as\n"
	      "Claude Code, Claude Desktop and Cursor that start it as a subprocess.\n"
	      "Setup: docs/mcp.md. The same server is at /mcp on `causeway serve`.\n"
	      "\n",
	      f);
	print_tools(f);
	fputs("\n"
	      "  -d, --db PATH    database (default causeway.db)\n"
	      "  --nodes, --fleet agents the fleet tool asks (with --ca-cert, --client-cert,\n"
	      "                   --client-key, --token-file, --node-timeout as for query)\n"
	      "  --help           this text\n"
	      "\n"
	      "examples:\n"
	      "  causeway mcp --db causeway-demo.db\n"
	      "  claude mcp add causeway -- causeway mcp --db /var/lib/causeway/causeway.db\n",
	      f);
}

struct stdio_srv {
	struct cw_mcp_config cfg;
	struct cw_mcp_session sess;
	pthread_mutex_t out_mu, run_mu;
	pthread_cond_t run_cv;
	int running;
};

/* One message per line; stdout is shared by the reader and the tool
 * threads, so every line is written whole under the lock. */
static void emit(struct stdio_srv *s, json_t *msg)
{
	char *line;

	if (!msg)
		return;
	line = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(msg);
	if (!line)
		return;
	pthread_mutex_lock(&s->out_mu);
	fputs(line, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&s->out_mu);
	free(line);
}

static void notify(void *arg, json_t *msg)
{
	emit(arg, msg);
}

static void handle(struct stdio_srv *s, const char *buf, size_t len)
{
	enum cw_mcp_kind kind;

	emit(s, cw_mcp_handle(&s->cfg, &s->sess, buf, len, notify, s, &kind, NULL));
}

struct job {
	struct stdio_srv *s;
	char *buf;
	size_t len;
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	struct stdio_srv *s = j->s;

	handle(s, j->buf, j->len);
	free(j->buf);
	free(j);
	pthread_mutex_lock(&s->run_mu);
	s->running--;
	pthread_cond_broadcast(&s->run_cv);
	pthread_mutex_unlock(&s->run_mu);
	return NULL;
}

/* tools/call goes to a thread; everything else is answered in line. */
static int is_tool_call(const char *buf, size_t len)
{
	json_t *v = json_loadb(buf, len, 0, NULL);
	const char *m = json_string_value(json_object_get(v, "method"));
	int r = m && !strcmp(m, "tools/call") && json_object_get(v, "id");

	json_decref(v);
	return r;
}

static void dispatch_line(struct stdio_srv *s, const char *buf, size_t len)
{
	struct job *j;
	pthread_attr_t at;
	pthread_t th;
	int busy;

	pthread_mutex_lock(&s->run_mu);
	busy = s->running >= CW_MCP_MAX_INFLIGHT;
	pthread_mutex_unlock(&s->run_mu);
	/* At the in-flight cap a tool call is refused at once by the
	 * dispatcher, so answering it in line costs nothing and a flood of
	 * calls cannot become a flood of threads. */
	if (busy || !is_tool_call(buf, len)) {
		handle(s, buf, len);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (j)
		j->buf = malloc(len + 1);
	if (!j || !j->buf) {
		free(j);
		handle(s, buf, len);
		return;
	}
	memcpy(j->buf, buf, len);
	j->buf[len] = 0;
	j->len = len;
	j->s = s;
	pthread_mutex_lock(&s->run_mu);
	s->running++;
	pthread_mutex_unlock(&s->run_mu);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &at, job_main, j)) {
		pthread_attr_destroy(&at);
		job_main(j); /* runs it here, and does the bookkeeping */
		return;
	}
	pthread_attr_destroy(&at);
}

static void serve_stdio(struct stdio_srv *s)
{
	struct strbuf line;
	char chunk[65536];
	int too_long = 0;

	strbuf_init(&line, CW_MCP_MAX_MESSAGE);
	while (fgets(chunk, sizeof(chunk), stdin)) {
		size_t n = strlen(chunk);
		int eol = n && chunk[n - 1] == '\n';

		if (eol)
			chunk[--n] = 0;
		if (!too_long && strbuf_add(&line, chunk, n))
			too_long = 1;
		if (!eol)
			continue;
		if (too_long) {
			emit(s, cw_jsonrpc_error(NULL, CW_JSONRPC_PARSE_ERROR, "message larger than %zu bytes",
						 CW_MCP_MAX_MESSAGE));
		} else {
			size_t len = line.len;

			/* A CRLF client, or a blank keep-alive line. */
			if (len && line.buf[len - 1] == '\r')
				len--;
			if (len)
				dispatch_line(s, strbuf_str(&line), len);
		}
		strbuf_reset(&line);
		too_long = 0;
	}
	if (line.len && !too_long)
		dispatch_line(s, strbuf_str(&line), line.len);
	strbuf_release(&line);
	/* stdin closed: let running calls answer, then leave. */
	pthread_mutex_lock(&s->run_mu);
	while (s->running)
		pthread_cond_wait(&s->run_cv, &s->run_mu);
	pthread_mutex_unlock(&s->run_mu);
}

int cmd_mcp(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cw_fleet_opts fo = { 0 };
	struct stdio_srv s;
	char node_label[256];
	int fleet = 0, c, rc;

	memset(&s, 0, sizeof(s));
	s.cfg.db_path = cw_default_db();
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return CW_EXIT_OK;
		}
	if (cw_fleet_cli_wanted(argc, argv)) {
		if ((rc = cw_fleet_cli_extract(&argc, argv, 0, &fo)))
			return rc;
		fleet = 1;
	}
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, "+:d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			s.cfg.db_path = optarg;
			break;
		default:
			rc = cw_opt_error(0, "mcp", c, argv);
			goto out;
		}
	}
	if (optind < argc) {
		rc = cw_opt_unexpected(0, "mcp", argv[optind]);
		goto out;
	}
	/* A missing database is not fatal: run_demo, check and where work
	 * without one, and the other tools say what is wrong. */
	if (access(s.cfg.db_path, R_OK))
		cw_warn("mcp: cannot read \"%s\" (%s); the trace tools will report it", s.cfg.db_path,
			strerror(errno));
	s.cfg.node = cw_reader_node(s.cfg.db_path, node_label, sizeof(node_label));
	cw_check_env_default(&s.cfg.check);
	s.cfg.transport = "stdio";
	s.cfg.allow_where = geteuid() == 0;
	/* where answers with the rights of whoever is on the other end. */
	if (cw_mcp_caller_from_fd(STDIN_FILENO, &s.cfg.caller))
		s.cfg.allow_where = 0;
	s.cfg.allow_export_path = 1;
	s.cfg.allow_demo = 1;
	s.cfg.demo_keep_db = 1;
	s.cfg.fleet = fleet ? &fo : NULL;
	cw_mcp_session_init(&s.sess);
	pthread_mutex_init(&s.out_mu, NULL);
	pthread_mutex_init(&s.run_mu, NULL);
	pthread_cond_init(&s.run_cv, NULL);
	/* A client that goes away mid-answer must not kill us with SIGPIPE
	 * before the running calls are cleaned up. */
	signal(SIGPIPE, SIG_IGN);
	serve_stdio(&s);
	cw_mcp_session_destroy(&s.sess);
	rc = CW_EXIT_OK;
out:
	if (fleet)
		cw_fleet_cli_release(&fo);
	return rc;
}
