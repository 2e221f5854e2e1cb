/* Subcommands. Each lives in cmd_<name>.c and is one row of the table in
 * main.c. Conventions every command follows:
 *  - `--help` prints usage on stdout and exits 0;
 *  - a usage error prints one line on stderr and exits CW_EXIT_USAGE;
 *  - with --json, errors are printed as {"error": "..."} on stdout;
 *  - --db PATH (default ./causeway.db, or the config's store path). */
#ifndef CW_CMD_CMD_H
#define CW_CMD_CMD_H

#include <sqlite3.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum cw_exit {
	CW_EXIT_OK = 0,
	CW_EXIT_FAIL = 1,      /* the work failed (database error, bad SQL, ...) */
	CW_EXIT_USAGE = 2,     /* bad flags or arguments */
	CW_EXIT_NOPERM = 3,    /* needs root / capabilities */
	CW_EXIT_NOFEATURE = 4, /* kernel lacks BTF, tracefs or a BPF feature */
	CW_EXIT_NOTARGET = 5,  /* unknown pid, library without the symbols */
	CW_EXIT_DB = 6,        /* database missing, corrupt, locked, newer or unwritable */
	CW_EXIT_NOMATCH = 7,   /* a filter or window that matches no data */
};

struct cw_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

int cmd_version(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_where(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_mcp(int argc, char **argv);

/* Work shared by a command and the MCP tool of the same name lives below
 * both (check/report.h, where/where.h, demo/build.h); these map it to the
 * command line. */
struct cw_check_env;
/* The check report's settings from the config and flags in effect. */
void cw_check_env_default(struct cw_check_env *env);

/* From the config file (main.c loads it before every command but version),
 * else built-in: the store path (CW_DEFAULT_DB), the store size cap (0 =
 * none) and the node name (--node, config, hostname). cmd/defaults.c. */
const char *cw_default_db(void);
uint64_t cw_default_size_cap(void);
/* GPU settings from the config (docs/config.md): the NVML library to load
 * (NULL: $CW_NVML_LIB or libnvidia-ml.so.1; $CW_NVML_LIB always wins), the
 * sample interval and the stall floor (0: the defaults). */
const char *cw_default_nvml_lib(void);
uint64_t cw_default_gpu_interval(void);
uint64_t cw_default_stall_after(void);
const char *cw_default_node(void);
/* The node a reader of db_path reports: --node or the config's node when
 * given, else the file's own node(s) (store/file_nodes.h), else the host's. */
const char *cw_reader_node(const char *db_path, char *buf, size_t len);
/* tenants.kubelet_url from the config; NULL: the pod list is not read. */
const char *cw_default_kubelet_url(void);

/* Warns on stderr, one line per session, when the sessions of the
 * database (db, or db_path opened read-only when db is NULL) lost records
 * (store/losses.h): what reading commands print before their results. */
void cw_warn_losses(const char *db_path, sqlite3 *db);

/* Global state set by main.c from flags before the subcommand. */
extern const char *cw_global_config_path; /* --config */
extern const char *cw_global_node;        /* --node */
/* --check-args: the command reads its options and exits 0 when they
 * parse (2 when not) without doing its work: how documented command lines
 * that need root, a network or a GPU are checked (tests/golden). */
extern int cw_global_check_args;

#endif
