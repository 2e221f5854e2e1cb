/* What `serve` and `trace --serve` share: server options completed from the
 * config file (flags first, then the file, then built-in defaults), the
 * bearer token from a file or the environment (never argv) or, when neither
 * a token nor a client CA is configured, generated into the default token
 * file; --no-auth (loopback only); the directory of the generated
 * certificate, and the start-up lines on stderr. */
#ifndef CW_CMD_SERVE_SETUP_H
#define CW_CMD_SERVE_SETUP_H

#include <limits.h>

#include "server/server.h"

struct serve_setup {
	struct cw_server_opts o; /* the caller sets what its flags gave */
	const char *token_file;  /* --token-file, NULL: $CW_TOKEN, else server.token_file */
	const char *tls_dir;     /* --tls-dir, NULL: ~/.causeway/tls, else next to the db */
	int tls_flags;           /* --cert, --key or --client-ca was given */
	char *token;             /* owned */
	int token_state;         /* 1: the default token file was read, 2: it was made now */
	char token_path[PATH_MAX]; /* the default token file, when token_state */
	char dirbuf[PATH_MAX];
	char node_label[256];    /* o.node when the file's nodes name it */
};

/* Completes s->o. Returns 0, or an exit code (CW_EXIT_USAGE) after printing
 * one line prefixed with who ("serve", "trace"). */
int serve_setup_resolve(struct serve_setup *s, const char *who);

/* Starts the server; prints where it serves. Returns 0 or an exit code. */
int serve_setup_start(struct serve_setup *s, const char *who, struct cw_server **out);

/* Wipes and frees the token. */
void serve_setup_release(struct serve_setup *s);

#endif
