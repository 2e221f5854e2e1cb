#define _GNU_SOURCE
#include "config/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "util/parse.h"
#include "util/timeutil.h"

/* The global flags live in main.c. Weak definitions here let the unit tests,
 * which link libcauseway.a without main.o, use this module; in the binary
 * main.c's strong definitions win. */
__attribute__((weak)) const char *cw_global_config_path;
__attribute__((weak)) const char *cw_global_node;

struct pctx {
	yaml_document_t *doc;
	const char *name;
	const char *base_dir;
	struct cw_config *c;
	char *err;
	size_t errlen;
	yaml_node_t *key; /* key of the pair being handled, for messages */
};

__attribute__((format(printf, 3, 4))) static int fail(struct pctx *p, yaml_node_t *n,
						      const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		snprintf(p->err, p->errlen, "config \"%s\" line %lu: %s", p->name,
			 (unsigned long)n->start_mark.line + 1, msg);
	else
		snprintf(p->err, p->errlen, "config \"%s\": %s", p->name, msg);
	return -EINVAL;
}

static int is_null(yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = (const char *)n->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

static int scalar(struct pctx *p, const char *key, yaml_node_t *n, const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return fail(p, n, "\"%s\" must be a single value", key);
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return fail(p, n, "\"%s\" contains a NUL byte", key);
	*out = (const char *)n->data.scalar.value;
	return 0;
}

static int set_str(struct pctx *p, const char *key, yaml_node_t *n, char **dst)
{
	const char *v;
	int rc;

	if (is_null(n))
		return 0;
	if ((rc = scalar(p, key, n, &v)))
		return rc;
	if (!*v)
		return fail(p, n, "\"%s\" must not be empty", key);
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

/* Relative paths in a config file mean "next to the config file", the only
 * reading that does not depend on the working directory of whoever runs it. */
static int set_path(struct pctx *p, const char *key, yaml_node_t *n, char **dst)
{
	int rc = set_str(p, key, n, dst);

	if (rc || !*dst || (*dst)[0] == '/' || !p->base_dir)
		return rc;
	if ((*dst)[0] == '~' && (*dst)[1] == '/') {
		const char *home = getenv("HOME");
		char *abs;

		if (!home || asprintf(&abs, "%s%s", home, *dst + 1) < 0)
			return fail(p, n, "\"%s\": cannot expand \"~\" without HOME", key);
		free(*dst);
		*dst = abs;
		return 0;
	} else {
		char *abs;

		if (asprintf(&abs, "%s/%s", p->base_dir, *dst) < 0)
			return -ENOMEM;
		free(*dst);
		*dst = abs;
	}
	return 0;
}

static int set_duration(struct pctx *p, const char *key, yaml_node_t *n, uint64_t *dst)
{
	const char *v;
	int rc;

	if (is_null(n))
		return 0;
	if ((rc = scalar(p, key, n, &v)))
		return rc;
	if (cw_parse_duration(v, dst) || *dst == 0)
		return fail(p, n, "\"%s\": bad duration \"%s\" (e.g. 2s, 250ms)", key, v);
	return 0;
}

static int set_hostport(struct pctx *p, const char *key, yaml_node_t *n, char **dst)
{
	char host[256];
	const char *v;
	int port, rc;

	if (is_null(n))
		return 0;
	if ((rc = scalar(p, key, n, &v)))
		return rc;
	/* A listen address may use port 0 (the kernel picks a free one). */
	if (cw_parse_hostport(v, host, sizeof(host), &port)) {
		char one[300];
		size_t l = strlen(v);

		if (l < 3 || l >= sizeof(one) || strcmp(v + l - 2, ":0"))
			return fail(p, n, "\"%s\": bad address \"%s\" (want HOST:PORT)", key, v);
		snprintf(one, sizeof(one), "%.*s:1", (int)(l - 2), v);
		if (cw_parse_hostport(one, host, sizeof(host), &port))
			return fail(p, n, "\"%s\": bad address \"%s\" (want HOST:PORT)", key, v);
	}
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

static int add_node(struct pctx *p, yaml_node_t *n, const char *v, size_t len)
{
	char host[256], buf[300];
	char **nn;
	int port;

	if (len >= sizeof(buf))
		return fail(p, n, "fleet node address too long");
	memcpy(buf, v, len);
	buf[len] = 0;
	if (cw_parse_hostport(buf, host, sizeof(host), &port))
		return fail(p, n, "fleet.nodes: bad address \"%s\" (want HOST:PORT)", buf);
	if (p->c->nfleet_nodes >= CW_CONFIG_MAX_NODES)
		return fail(p, n, "fleet.nodes: more than %d nodes", CW_CONFIG_MAX_NODES);
	nn = realloc(p->c->fleet_nodes, sizeof(*nn) * (size_t)(p->c->nfleet_nodes + 1));
	if (!nn)
		return -ENOMEM;
	p->c->fleet_nodes = nn;
	if (!(nn[p->c->nfleet_nodes] = strdup(buf)))
		return -ENOMEM;
	p->c->nfleet_nodes++;
	return 0;
}

/* fleet.nodes: a YAML sequence, or one "a:1,b:2" string (what --nodes takes). */
static int set_nodes(struct pctx *p, yaml_node_t *n)
{
	yaml_node_item_t *it;
	int rc;

	if (is_null(n))
		return 0;
	if (n->type == YAML_SCALAR_NODE) {
		const char *v = (const char *)n->data.scalar.value, *comma;

		while (*v) {
			comma = strchr(v, ',');
			if ((rc = add_node(p, n, v, comma ? (size_t)(comma - v) : strlen(v))))
				return rc;
			if (!comma)
				break;
			v = comma + 1;
		}
		return 0;
	}
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(p, n, "\"fleet.nodes\" must be a list of HOST:PORT");
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(p->doc, *it);
		const char *v;

		if ((rc = scalar(p, "fleet.nodes", e, &v)) ||
		    (rc = add_node(p, e, v, strlen(v))))
			return rc;
	}
	return 0;
}

typedef int (*section_fn)(struct pctx *p, const char *key, yaml_node_t *v);

/* Walks a mapping, refusing duplicate keys, and hands each pair to fn. */
static int walk(struct pctx *p, const char *section, yaml_node_t *m, section_fn fn)
{
	yaml_node_pair_t *a, *b;
	int rc;

	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return fail(p, m, "\"%s\" must be a mapping of keys", section);
	for (a = m->data.mapping.pairs.start; a < m->data.mapping.pairs.top; a++) {
		yaml_node_t *k = yaml_document_get_node(p->doc, a->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, a->value);

		if (k->type != YAML_SCALAR_NODE)
			return fail(p, k, "keys in \"%s\" must be plain names", section);
		for (b = m->data.mapping.pairs.start; b < a; b++) {
			yaml_node_t *k2 = yaml_document_get_node(p->doc, b->key);

			if (k2->type == YAML_SCALAR_NODE &&
			    !strcmp((char *)k2->data.scalar.value, (char *)k->data.scalar.value))
				return fail(p, k, "duplicate key \"%s\"", (char *)k->data.scalar.value);
		}
		p->key = k;
		if ((rc = fn(p, (const char *)k->data.scalar.value, v)))
			return rc;
	}
	return 0;
}

static int unknown(struct pctx *p, const char *section, const char *key, yaml_node_t *v)
{
	char where[96];

	snprintf(where, sizeof(where), "%s%s", section, *section ? "." : "");
	return fail(p, p->key ? p->key : v, "unknown key \"%s%s\"", where, key);
}

static int do_tls(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "cert"))
		return set_path(p, "server.tls.cert", v, &p->c->tls_cert);
	if (!strcmp(key, "key"))
		return set_path(p, "server.tls.key", v, &p->c->tls_key);
	if (!strcmp(key, "client_ca"))
		return set_path(p, "server.tls.client_ca", v, &p->c->tls_client_ca);
	return unknown(p, "server.tls", key, v);
}

static int do_server(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "listen"))
		return set_hostport(p, "server.listen", v, &p->c->server_listen);
	if (!strcmp(key, "tls"))
		return walk(p, "server.tls", v, do_tls);
	if (!strcmp(key, "token_file"))
		return set_path(p, "server.token_file", v, &p->c->server_token_file);
	if (!strcmp(key, "timeout"))
		return set_duration(p, "server.timeout", v, &p->c->server_timeout_ns);
	if (!strcmp(key, "read_timeout"))
		return set_duration(p, "server.read_timeout", v, &p->c->server_read_timeout_ns);
	if (!strcmp(key, "max_rows")) {
		char shown[CW_SHOWN_BUF];
		const char *s;
		uint64_t n;
		int rc;

		if (is_null(v))
			return 0;
		if ((rc = scalar(p, "server.max_rows", v, &s)))
			return rc;
		if (cw_parse_uint(s, 1, INT64_MAX, &n))
			return fail(p, v, "\"server.max_rows\": bad count \"%s\" (1 or more)",
				    cw_shown(s, shown));
		p->c->server_max_rows = (int64_t)n;
		return 0;
	}
	return unknown(p, "server", key, v);
}

static int do_store(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "path"))
		return set_path(p, "store.path", v, &p->c->store_path);
	if (!strcmp(key, "max_size")) {
		const char *s;
		int rc;

		if (is_null(v))
			return 0;
		if ((rc = scalar(p, "store.max_size", v, &s)))
			return rc;
		if (cw_parse_size(s, &p->c->store_max_bytes))
			return fail(p, v, "\"store.max_size\": bad size \"%s\" (e.g. 2GiB)", s);
		return 0;
	}
	return unknown(p, "store", key, v);
}

static int do_fleet(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "nodes"))
		return set_nodes(p, v);
	if (!strcmp(key, "ca_cert"))
		return set_path(p, "fleet.ca_cert", v, &p->c->fleet_ca_cert);
	if (!strcmp(key, "client_cert"))
		return set_path(p, "fleet.client_cert", v, &p->c->fleet_client_cert);
	if (!strcmp(key, "client_key"))
		return set_path(p, "fleet.client_key", v, &p->c->fleet_client_key);
	if (!strcmp(key, "token_file"))
		return set_path(p, "fleet.token_file", v, &p->c->fleet_token_file);
	if (!strcmp(key, "timeout"))
		return set_duration(p, "fleet.timeout", v, &p->c->fleet_timeout_ns);
	if (!strcmp(key, "skew_warn"))
		return set_duration(p, "fleet.skew_warn", v, &p->c->fleet_skew_warn_ns);
	return unknown(p, "fleet", key, v);
}

static int do_otlp(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "endpoint")) {
		int rc = set_str(p, "otlp.endpoint", v, &p->c->otlp_endpoint);
		const char *e = p->c->otlp_endpoint;

		if (!rc && e && strncmp(e, "http://", 7) && strncmp(e, "https://", 8))
			return fail(p, v, "\"otlp.endpoint\": \"%.100s\" is not an http:// or https:// URL", e);
		return rc;
	}
	if (!strcmp(key, "interval")) {
		int rc = set_duration(p, "otlp.interval", v, &p->c->otlp_interval_ns);

		if (!rc && p->c->otlp_interval_ns && p->c->otlp_interval_ns < 1000000000ULL)
			return fail(p, v, "\"otlp.interval\": at least 1s");
		return rc;
	}
	if (!strcmp(key, "ca_cert"))
		return set_path(p, "otlp.ca_cert", v, &p->c->otlp_ca_cert);
	if (!strcmp(key, "queue")) {
		const char *s;
		char *end;
		long n;
		int rc;

		if ((rc = scalar(p, "otlp.queue", v, &s)))
			return rc;
		errno = 0;
		n = strtol(s, &end, 10);
		if (errno || end == s || *end || n < 1 || n > 10000)
			return fail(p, v, "\"otlp.queue\": bad count \"%.40s\" (1 to 10000 payloads)", s);
		p->c->otlp_queue = (unsigned)n;
		return 0;
	}
	return unknown(p, "otlp", key, v);
}

static int do_gpu(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "nvml_lib"))
		return set_path(p, "gpu.nvml_lib", v, &p->c->gpu_nvml_lib);
	if (!strcmp(key, "interval"))
		return set_duration(p, "gpu.interval", v, &p->c->gpu_interval_ns);
	if (!strcmp(key, "stall_after"))
		return set_duration(p, "gpu.stall_after", v, &p->c->gpu_stall_after_ns);
	return unknown(p, "gpu", key, v);
}

static int do_tenants(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "kubelet_url")) {
		int rc = set_str(p, "tenants.kubelet_url", v, &p->c->tenants_kubelet_url);
		const char *u = p->c->tenants_kubelet_url;

		if (!rc && u && strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
			return fail(p, v, "\"tenants.kubelet_url\": \"%.100s\" is not an http:// or https:// URL", u);
		return rc;
	}
	return unknown(p, "tenants", key, v);
}

static int do_top(struct pctx *p, const char *key, yaml_node_t *v)
{
	if (!strcmp(key, "node")) {
		int rc = set_str(p, "node", v, &p->c->node);
		char shown[CW_SHOWN_BUF];

		if (!rc && p->c->node && !cw_node_name_valid(p->c->node))
			return fail(p, v, "bad node name \"%s\" (" CW_NODE_NAME_RULE ")",
				    cw_shown(p->c->node, shown));
		return rc;
	}
	if (!strcmp(key, "store"))
		return walk(p, "store", v, do_store);
	if (!strcmp(key, "server"))
		return walk(p, "server", v, do_server);
	if (!strcmp(key, "fleet"))
		return walk(p, "fleet", v, do_fleet);
	if (!strcmp(key, "otlp"))
		return walk(p, "otlp", v, do_otlp);
	if (!strcmp(key, "gpu"))
		return walk(p, "gpu", v, do_gpu);
	if (!strcmp(key, "tenants"))
		return walk(p, "tenants", v, do_tenants);
	return unknown(p, "", key, v);
}

int cw_config_parse(const char *text, size_t len, const char *name, const char *base_dir,
		    struct cw_config *out, char *err, size_t errlen)
{
	struct pctx p = { .name = name, .base_dir = base_dir, .c = out, .err = err, .errlen = errlen };
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "config \"%s\" line %lu: %s", name,
			 (unsigned long)parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "syntax error");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	p.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	/* A file with nothing in it (or only comments, or a bare null) is
	 * more likely a mistake, a truncated copy or the wrong file, than a
	 * wish for the defaults; `{}` says that explicitly. */
	if (!root || is_null(root)) {
		snprintf(err, errlen, "config \"%s\" is empty (no settings); write {} for the "
			 "defaults", name);
		rc = -EINVAL;
	} else {
		rc = walk(&p, "the top level", root, do_top);
	}
	yaml_document_delete(&doc);
	/* Only the first document would count, so a second one (after
	 * "---") is refused rather than ignored. */
	if (!rc) {
		if (!yaml_parser_load(&parser, &doc)) {
			snprintf(err, errlen, "config \"%s\" line %lu: %s", name,
				 (unsigned long)parser.problem_mark.line + 1,
				 parser.problem ? parser.problem : "syntax error");
			rc = -EINVAL;
		} else {
			if (yaml_document_get_root_node(&doc)) {
				snprintf(err, errlen, "config \"%s\" line %lu: a second YAML document; "
					 "the config is one document", name,
					 (unsigned long)doc.start_mark.line + 1);
				rc = -EINVAL;
			}
			yaml_document_delete(&doc);
		}
	}
	yaml_parser_delete(&parser);
	if (rc)
		cw_config_free(out);
	return rc;
}

static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	FILE *f;
	int rc;

	f = fopen(path, "re");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "cannot read config \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		snprintf(err, errlen, "config \"%s\" is not a regular file", path);
		return -EINVAL;
	}
	if (st.st_size > CW_CONFIG_MAX_BYTES) {
		fclose(f);
		snprintf(err, errlen, "config \"%s\" is larger than %d bytes", path,
			 CW_CONFIG_MAX_BYTES);
		return -EFBIG;
	}
	*text = malloc((size_t)st.st_size + 1);
	if (!*text) {
		fclose(f);
		return -ENOMEM;
	}
	*len = fread(*text, 1, (size_t)st.st_size, f);
	(*text)[*len] = 0;
	rc = ferror(f) ? -EIO : 0;
	fclose(f);
	if (rc) {
		free(*text);
		snprintf(err, errlen, "cannot read config \"%s\"", path);
	}
	return rc;
}

int cw_config_load(const char *path_or_null, struct cw_config *out, char *err, size_t errlen)
{
	char user[PATH_MAX], *text = NULL, *dir = NULL, *slash;
	const char *path = path_or_null, *home;
	size_t len = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!path) {
		if (access(CW_CONFIG_SYSTEM_PATH, F_OK) == 0) {
			path = CW_CONFIG_SYSTEM_PATH;
		} else if ((home = getenv("HOME")) && *home &&
			   (size_t)snprintf(user, sizeof(user), "%s/%s", home,
					    CW_CONFIG_USER_PATH) < sizeof(user) &&
			   access(user, F_OK) == 0) {
			path = user;
		} else {
			return 0;
		}
	}
	if ((rc = read_file(path, &text, &len, err, errlen)))
		return rc;
	if (!(dir = strdup(path))) {
		free(text);
		return -ENOMEM;
	}
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	rc = cw_config_parse(text, len, path, slash ? dir : ".", out, err, errlen);
	free(text);
	free(dir);
	if (!rc && !(out->source = strdup(path))) {
		cw_config_free(out);
		return -ENOMEM;
	}
	return rc;
}

void cw_config_free(struct cw_config *c)
{
	int i;

	if (!c)
		return;
	free(c->source);
	free(c->node);
	free(c->store_path);
	free(c->gpu_nvml_lib);
	free(c->tenants_kubelet_url);
	free(c->server_listen);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->tls_client_ca);
	free(c->server_token_file);
	for (i = 0; i < c->nfleet_nodes; i++)
		free(c->fleet_nodes[i]);
	free(c->fleet_nodes);
	free(c->fleet_ca_cert);
	free(c->fleet_client_cert);
	free(c->fleet_client_key);
	free(c->fleet_token_file);
	free(c->otlp_endpoint);
	free(c->otlp_ca_cert);
	memset(c, 0, sizeof(*c));
}

int cw_node_name_valid(const char *s)
{
	size_t n;

	if (!s || !*s)
		return 0;
	for (n = 0; s[n]; n++)
		if (!isalnum((unsigned char)s[n]) && s[n] != '.' && s[n] != '_' && s[n] != '-')
			return 0;
	return n < CW_NODE_NAME_MAX;
}

const char *cw_node_name(const struct cw_config *c)
{
	static char host[256];

	if (cw_global_node && *cw_global_node)
		return cw_global_node;
	if (c && c->node)
		return c->node;
	if (gethostname(host, sizeof(host) - 1) || !host[0])
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	/* Node names travel in SQL rows, JSON and Prometheus labels; a
	 * hostname longer than that is cut at its first dot (the FQDN's host). */
	if (strlen(host) >= CW_NODE_NAME_MAX) {
		char *dot = strchr(host, '.');

		if (dot)
			*dot = 0;
		host[CW_NODE_NAME_MAX - 1] = 0;
	}
	return host;
}

int cw_config_get(const struct cw_config **out, char *err, size_t errlen)
{
	static struct cw_config cfg;
	static int loaded, load_rc;
	static char saved[512];

	if (!loaded) {
		load_rc = cw_config_load(cw_global_config_path, &cfg, saved, sizeof(saved));
		loaded = 1;
	}
	if (load_rc) {
		snprintf(err, errlen, "%s", saved);
		return load_rc;
	}
	*out = &cfg;
	return 0;
}

int cw_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "", 1 },	   { "B", 1 },		  { "KB", 1000ULL },	{ "KiB", 1ULL << 10 },
		{ "MB", 1000000ULL }, { "MiB", 1ULL << 20 }, { "GB", 1000000000ULL },
		{ "GiB", 1ULL << 30 }, { "TB", 1000000000000ULL }, { "TiB", 1ULL << 40 },
		{ "K", 1ULL << 10 },  { "M", 1ULL << 20 },   { "G", 1ULL << 30 },
	};
	const char *end;
	double v;
	size_t i, n;

	/* The number as cw_parse_real takes it (no sign, hex, inf or nan). */
	if (!s || !(n = cw_real_span(s)))
		return -EINVAL;
	errno = 0;
	v = strtod(s, NULL);
	if (errno == ERANGE || !isfinite(v))
		return -ERANGE;
	for (end = s + n; *end == ' ';)
		end++;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].suffix)) {
			double b = v * (double)units[i].mult;

			if (b >= 1.8e19 || (v > 0 && b < 1))
				return -ERANGE;
			*out = (uint64_t)b;
			return 0;
		}
	}
	return -EINVAL;
}

int cw_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
	const char *colon, *hs, *he;
	char *end;
	long p;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '[') {
		he = strchr(s, ']');
		if (!he || he[1] != ':')
			return -EINVAL;
		hs = s + 1;
		colon = he + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL; /* bare IPv6 needs brackets */
		hs = s;
		he = colon;
	}
	if (he == hs || (size_t)(he - hs) >= hostlen)
		return -EINVAL;
	for (const char *q = hs; q < he; q++)
		if (isspace((unsigned char)*q) || *q == '/' || *q == ',')
			return -EINVAL;
	if (!isdigit((unsigned char)colon[1]))
		return -EINVAL;
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno || *end || p < 1 || p > 65535)
		return -EINVAL;
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = 0;
	*port = (int)p;
	return 0;
}
