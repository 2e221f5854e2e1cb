/* The causeway configuration file (YAML, read with libyaml).
 *
 * One file per host, found as: the global --config flag, else
 * /etc/causeway/causeway.yaml, else ~/.causeway/causeway.yaml; no file at
 * all is not an error (every field has a default). Unknown keys, wrong
 * types and bad values are errors that name the line. docs/config.md is
 * the reference; deploy/causeway.example.yaml a commented example.
 *
 *   node: gpu-node-07
 *   store: { path: /var/lib/causeway/causeway.db, max_size: 2GiB }
 *   server:
 *     listen: 0.0.0.0:7070
 *     tls: { cert: ..., key: ..., client_ca: ... }
 *     token_file: /etc/causeway/token  # none: one is generated (~/.causeway/token)
 *     read_timeout: 10s
 *     mcp_live_tools: false  # where, run_demo, export_timeline's path over /mcp
 *   fleet:
 *     nodes: [gpu-node-01:7070, gpu-node-02:7070]
 *     ca_cert: ...        # CA that signed the agents' server certificates
 *     client_cert: ...    # this workstation's client certificate
 *     client_key: ...
 *     token_file: ...
 *     timeout: 2s
 *     skew_warn: 50ms */
#ifndef CW_CONFIG_CONFIG_H
#define CW_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define CW_CONFIG_SYSTEM_PATH "/etc/causeway/causeway.yaml"
#define CW_CONFIG_USER_PATH ".causeway/causeway.yaml" /* under $HOME */
#define CW_CONFIG_MAX_BYTES (1 << 20)
/* Nesting of sequences and mappings a config may have (it uses three). */
#define CW_CONFIG_MAX_DEPTH 32
#define CW_CONFIG_MAX_NODES 1024
#define CW_NODE_NAME_MAX 64

struct cw_config {
	char *source;              /* the file read, NULL when none was found */
	char *node;                /* node name; NULL: hostname */
	char *store_path;          /* NULL: CW_DEFAULT_DB */
	uint64_t store_max_bytes;  /* 0: no cap */

	char *server_listen;       /* "ADDR:PORT"; NULL: the serve default */
	char *tls_cert, *tls_key;  /* server certificate and key (PEM) */
	char *tls_client_ca;       /* when set, clients must present a cert it signed */
	char *server_token_file;   /* bearer token the server requires */
	int64_t server_max_rows;   /* 0: default */
	uint64_t server_timeout_ns;
	uint64_t server_read_timeout_ns; /* whole request must arrive within; 0: default */
	unsigned server_no_auth;   /* no credential at all (loopback only, warned) */
	unsigned server_mcp_live_tools; /* /mcp serves where, run_demo, export_timeline's path */

	char **fleet_nodes;        /* "host:port" */
	int nfleet_nodes;
	char *fleet_ca_cert;       /* verifies the agents */
	char *fleet_client_cert, *fleet_client_key;
	char *fleet_token_file;    /* token sent to the agents */
	uint64_t fleet_timeout_ns; /* per node; 0: default */
	uint64_t fleet_skew_warn_ns;

	char *otlp_endpoint;       /* OTLP/HTTP receiver; NULL: no export */
	uint64_t otlp_interval_ns; /* 0: default */
	char *otlp_ca_cert;        /* https receiver's CA; NULL: the system's */
	unsigned otlp_queue;       /* payloads held while the receiver is down; 0: default */
	char *gpu_nvml_lib;        /* NULL: $CW_NVML_LIB, else libnvidia-ml.so.1 */
	uint64_t gpu_interval_ns;  /* 0: 1 s */
	uint64_t gpu_stall_after_ns; /* 0: 30 s */
	char *tenants_kubelet_url; /* the kubelet's read-only pod list; NULL: not read */
	char *mcp_export_dir;      /* where MCP export_timeline writes; NULL: ~/.causeway/exports */
};

/* Reads path_or_null, or the first default path that exists. Relative
 * paths inside the file are resolved against the file's directory.
 * Returns 0 (out filled; zeroed when no file exists and none was named) or
 * -errno with one lower-case sentence in err, naming the file and line:
 *   -ENOENT  the named file does not exist
 *   -EINVAL  syntax error, unknown key, wrong type or bad value
 *   -EFBIG   file larger than CW_CONFIG_MAX_BYTES
 *   -EACCES/-EIO  cannot read it.
 * out is always safe to pass to cw_config_free. */
int cw_config_load(const char *path_or_null, struct cw_config *out, char *err, size_t errlen);

/* Parses a YAML document held in memory; name is used in messages and
 * base_dir (may be NULL) resolves relative paths. */
int cw_config_parse(const char *text, size_t len, const char *name, const char *base_dir,
		    struct cw_config *out, char *err, size_t errlen);

void cw_config_free(struct cw_config *c);

/* The node name: the global --node flag (cw_global_node), else the
 * config's node, else the hostname; never NULL. c may be NULL. The
 * returned string lives until the next call or cw_config_free. */
const char *cw_node_name(const struct cw_config *c);

/* 1 when s is a valid node name: 1..63 of [A-Za-z0-9._-]. */
#define CW_NODE_NAME_RULE "1-63 of A-Z a-z 0-9 . _ -"
int cw_node_name_valid(const char *s);

/* Loads the config the global --config flag names (or the defaults) once
 * per process and caches it; commands call this. Returns 0 or -errno with
 * err filled like cw_config_load. */
int cw_config_get(const struct cw_config **out, char *err, size_t errlen);

/* Parses a size such as "512MiB", "2GiB", "10GB", "4096" (bytes): a
 * number as cw_parse_real takes it, then a unit. Returns 0, -EINVAL, or
 * -ERANGE (overflow, or a positive size under one byte). */
int cw_parse_size(const char *s, uint64_t *out);

/* Splits "host:port" or "[v6addr]:port" into host (without brackets) and
 * port 1..65535. Returns 0 or -EINVAL. */
int cw_parse_hostport(const char *s, char *host, size_t hostlen, int *port);

#endif
