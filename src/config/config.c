#define _GNU_SOURCE
#include "config/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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

/* The text of an optional value: 1 when n is null (the default stays), 0
 * with *out set, or -errno. */
static int optional(struct pctx *p, const char *key, yaml_node_t *n, const char **out)
{
	return is_null(n) ? 1 : scalar(p, key, n, out);
}

static int store_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

static int set_str(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	char **dst = field;
	const char *v;
	int rc;

	if ((rc = optional(p, key, n, &v)))
		return rc < 0 ? rc : 0;
	if (!*v)
		return fail(p, n, "\"%s\" must not be empty", key);
	return store_str(dst, v);
}

/* Relative paths in a config file mean "next to the config file", the only
 * reading that does not depend on the working directory of whoever runs it. */
static int set_path(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	char **dst = field;
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

/* An optional number with a unit, read by parse; 0 is refused unless
 * zero_ok. what and example word the error. */
static int set_number(struct pctx *p, const char *key, yaml_node_t *n, uint64_t *dst,
		      int (*parse)(const char *, uint64_t *), int zero_ok, const char *what, const char *example)
{
	const char *v;
	int rc;

	if ((rc = optional(p, key, n, &v)))
		return rc < 0 ? rc : 0;
	if (parse(v, dst) || (!zero_ok && *dst == 0))
		return fail(p, n, "\"%s\": bad %s \"%s\" (e.g. %s)", key, what, v, example);
	return 0;
}

static int set_duration(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	return set_number(p, key, n, field, cw_parse_duration, 0, "duration", "2s, 250ms");
}

static int set_hostport(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	char **dst = field;
	char host[256];
	const char *v;
	int port, rc;

	if ((rc = optional(p, key, n, &v)))
		return rc < 0 ? rc : 0;
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
	return store_str(dst, v);
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
	/* "http://" is plain HTTP, chosen explicitly (docs/fleet.md), as
	 * --nodes takes it; "https://" the default spelled out. */
	if (cw_parse_hostport(buf + (!strncmp(buf, "http://", 7) ? 7 : !strncmp(buf, "https://", 8) ? 8 : 0), host,
			      sizeof(host), &port))
		return fail(p, n, "fleet.nodes: bad address \"%s\" (want HOST:PORT, http://HOST:PORT for plain HTTP)",
			    buf);
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
static int set_nodes(struct pctx *p, const char *key, yaml_node_t *n, void *field)
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
		return fail(p, n, "\"%s\" must be a list of HOST:PORT", key);
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(p->doc, *it);
		const char *v;

		if ((rc = scalar(p, key, e, &v)) || (rc = add_node(p, e, v, strlen(v))))
			return rc;
	}
	return 0;
}

/* The setters below check one value and store it at dst, a field of the
 * config; key is the full dotted name for messages. */
static int set_url(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	char **dst = field;
	int rc = set_str(p, key, n, dst);

	if (!rc && *dst && strncmp(*dst, "http://", 7) && strncmp(*dst, "https://", 8))
		return fail(p, n, "\"%s\": \"%.100s\" is not an http:// or https:// URL", key, *dst);
	return rc;
}

static int set_node(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	char **dst = field;
	int rc = set_str(p, key, n, dst);
	char shown[CW_SHOWN_BUF];

	if (!rc && *dst && !cw_node_name_valid(*dst))
		return fail(p, n, "bad node name \"%s\" (" CW_NODE_NAME_RULE ")", cw_shown(*dst, shown));
	return rc;
}

/* OTLP exports are batched per interval; under a second is a receiver flood. */
static int set_interval(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	uint64_t *dst = field;
	int rc = set_duration(p, key, n, dst);

	if (!rc && *dst && *dst < 1000000000ULL)
		return fail(p, n, "\"%s\": at least 1s", key);
	return rc;
}

static int set_size(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	return set_number(p, key, n, field, cw_parse_size, 1, "size", "2GiB");
}

static int set_max_rows(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	int64_t *dst = field;
	char shown[CW_SHOWN_BUF];
	const char *s;
	uint64_t v;
	int rc;

	if ((rc = optional(p, key, n, &s)))
		return rc < 0 ? rc : 0;
	if (cw_parse_uint(s, 1, INT64_MAX, &v))
		return fail(p, n, "\"%s\": bad count \"%s\" (1 or more)", key, cw_shown(s, shown));
	*dst = (int64_t)v;
	return 0;
}

static int set_queue(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	unsigned *dst = field;
	const char *s;
	char *end;
	long v;
	int rc;

	if ((rc = scalar(p, key, n, &s)))
		return rc;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 10000)
		return fail(p, n, "\"%s\": bad count \"%.40s\" (1 to 10000 payloads)", key, s);
	*dst = (unsigned)v;
	return 0;
}

/* YAML 1.2 core schema booleans (and 1.1's yes/no, which files still use). */
static int set_bool(struct pctx *p, const char *key, yaml_node_t *n, void *field)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on", NULL };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "off", NULL };
	unsigned *dst = field;
	const char *s;
	int rc, i;

	if ((rc = scalar(p, key, n, &s)))
		return rc;
	for (i = 0; yes[i]; i++)
		if (!strcmp(s, yes[i])) {
			*dst = 1;
			return 0;
		}
	for (i = 0; no[i]; i++)
		if (!strcmp(s, no[i])) {
			*dst = 0;
			return 0;
		}
	return fail(p, n, "\"%s\": bad boolean \"%.40s\" (true or false)", key, s);
}

/* Every key of the file: where it sits, what it holds, which field of
 * struct cw_config it fills and the setter that checks it. A row without a
 * setter is a section, a mapping of the rows that name it. docs/config.md
 * describes each. */
enum cfg_type { CFG_SECTION, CFG_STR, CFG_U64, CFG_I64, CFG_UINT, CFG_LIST };

typedef int (*cfg_setter)(struct pctx *p, const char *key, yaml_node_t *n, void *dst);

struct cfg_key {
	const char *section; /* "" at the top level */
	const char *name;
	enum cfg_type type;
	size_t off; /* offsetof(struct cw_config, field) */
	cfg_setter set;
};

#define KEY(sec, name, type, field, fn) { sec, name, type, offsetof(struct cw_config, field), fn }
#define SECTION(sec, name) { sec, name, CFG_SECTION, 0, NULL }

static const struct cfg_key keys[] = {
	KEY("", "node", CFG_STR, node, set_node),
	SECTION("", "store"),
	SECTION("", "server"),
	SECTION("", "fleet"),
	SECTION("", "otlp"),
	SECTION("", "gpu"),
	SECTION("", "tenants"),
	SECTION("", "mcp"),

	KEY("store", "path", CFG_STR, store_path, set_path),
	KEY("store", "max_size", CFG_U64, store_max_bytes, set_size),

	KEY("server", "listen", CFG_STR, server_listen, set_hostport),
	SECTION("server", "tls"),
	KEY("server", "token_file", CFG_STR, server_token_file, set_path),
	KEY("server", "timeout", CFG_U64, server_timeout_ns, set_duration),
	KEY("server", "read_timeout", CFG_U64, server_read_timeout_ns, set_duration),
	KEY("server", "max_rows", CFG_I64, server_max_rows, set_max_rows),
	KEY("server", "no_auth", CFG_UINT, server_no_auth, set_bool),
	KEY("server", "mcp_live_tools", CFG_UINT, server_mcp_live_tools, set_bool),
	KEY("server.tls", "cert", CFG_STR, tls_cert, set_path),
	KEY("server.tls", "key", CFG_STR, tls_key, set_path),
	KEY("server.tls", "client_ca", CFG_STR, tls_client_ca, set_path),

	KEY("fleet", "nodes", CFG_LIST, fleet_nodes, set_nodes),
	KEY("fleet", "ca_cert", CFG_STR, fleet_ca_cert, set_path),
	KEY("fleet", "client_cert", CFG_STR, fleet_client_cert, set_path),
	KEY("fleet", "client_key", CFG_STR, fleet_client_key, set_path),
	KEY("fleet", "token_file", CFG_STR, fleet_token_file, set_path),
	KEY("fleet", "timeout", CFG_U64, fleet_timeout_ns, set_duration),
	KEY("fleet", "skew_warn", CFG_U64, fleet_skew_warn_ns, set_duration),

	KEY("otlp", "endpoint", CFG_STR, otlp_endpoint, set_url),
	KEY("otlp", "interval", CFG_U64, otlp_interval_ns, set_interval),
	KEY("otlp", "ca_cert", CFG_STR, otlp_ca_cert, set_path),
	KEY("otlp", "queue", CFG_UINT, otlp_queue, set_queue),

	KEY("gpu", "nvml_lib", CFG_STR, gpu_nvml_lib, set_path),
	KEY("gpu", "interval", CFG_U64, gpu_interval_ns, set_duration),
	KEY("gpu", "stall_after", CFG_U64, gpu_stall_after_ns, set_duration),

	KEY("tenants", "kubelet_url", CFG_STR, tenants_kubelet_url, set_url),

	KEY("mcp", "export_dir", CFG_STR, mcp_export_dir, set_path),
};

static const struct cfg_key *find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].section, section) && !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* Walks the mapping of section ("" for the top level), refusing duplicate
 * and unknown keys, and hands each value to its row's setter. */
static int walk(struct pctx *p, const char *section, yaml_node_t *m)
{
	const char *label = *section ? section : "the top level";
	yaml_node_pair_t *a, *b;
	int rc;

	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return fail(p, m, "\"%s\" must be a mapping of keys", label);
	for (a = m->data.mapping.pairs.start; a < m->data.mapping.pairs.top; a++) {
		yaml_node_t *k = yaml_document_get_node(p->doc, a->key);
		yaml_node_t *v = yaml_document_get_node(p->doc, a->value);
		const struct cfg_key *row;
		const char *name;
		char path[96];

		if (k->type != YAML_SCALAR_NODE)
			return fail(p, k, "keys in \"%s\" must be plain names", label);
		name = (const char *)k->data.scalar.value;
		for (b = m->data.mapping.pairs.start; b < a; b++) {
			yaml_node_t *k2 = yaml_document_get_node(p->doc, b->key);

			if (k2->type == YAML_SCALAR_NODE && !strcmp((char *)k2->data.scalar.value, name))
				return fail(p, k, "duplicate key \"%s\"", name);
		}
		p->key = k;
		if (!(row = find_key(section, name)))
			return fail(p, k, "unknown key \"%s%s%s\"", section, *section ? "." : "", name);
		snprintf(path, sizeof(path), "%s%s%s", section, *section ? "." : "", name);
		rc = row->set ? row->set(p, path, v, (char *)p->c + row->off) : walk(p, path, v);
		if (rc)
			return rc;
	}
	return 0;
}

/* libyaml has no nesting limit and its document loader is quadratic in the
 * depth (40,000 levels: 5 s; a 1 MiB file of '[': minutes). A pass over the
 * events first stops at the cap, after reading no more than the cap's
 * worth of structure; the config itself is three levels deep. */
static int check_depth(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, rc = 0, done = 0;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (!done && !rc) {
		if (!yaml_parser_parse(&parser, &ev))
			break; /* the loader reports the syntax error with its line */
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > CW_CONFIG_MAX_DEPTH) {
				snprintf(err, errlen, "config \"%s\" line %lu: nested deeper than %d levels", name,
					 (unsigned long)ev.start_mark.line + 1, CW_CONFIG_MAX_DEPTH);
				rc = -EINVAL;
			}
		} else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return rc;
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
	if ((rc = check_depth(text, len, name, err, errlen)))
		return rc;
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
		rc = walk(&p, "", root);
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
	int rc, fd;

	/* O_NONBLOCK: opening a FIFO waits for a writer otherwise; it is
	 * refused below, like any file that is not a regular one. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read config \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "config \"%s\" is not a regular file", path);
		return -EINVAL;
	}
	if (fcntl(fd, F_SETFL, 0) || !(f = fdopen(fd, "r"))) {
		rc = -errno;
		close(fd);
		snprintf(err, errlen, "cannot read config \"%s\": %s", path, strerror(-rc));
		return rc;
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
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (keys[k].type == CFG_STR)
			free(*(char **)((char *)c + keys[k].off));
	free(c->source);
	for (i = 0; i < c->nfleet_nodes; i++)
		free(c->fleet_nodes[i]);
	free(c->fleet_nodes);
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
	static const struct cw_unit units[] = {
		{ "", 1 },	   { "B", 1 },		  { "KB", 1000ULL },	{ "KiB", 1ULL << 10 },
		{ "MB", 1000000ULL }, { "MiB", 1ULL << 20 }, { "GB", 1000000000ULL },
		{ "GiB", 1ULL << 30 }, { "TB", 1000000000000ULL }, { "TiB", 1ULL << 40 },
		{ "K", 1ULL << 10 },  { "M", 1ULL << 20 },   { "G", 1ULL << 30 },
	};
	double b;
	int rc = cw_parse_scaled(s, units, sizeof(units) / sizeof(units[0]), 1, &b);

	if (rc)
		return rc;
	if (b >= 1.8e19 || (b > 0 && b < 1))
		return -ERANGE;
	*out = (uint64_t)b;
	return 0;
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
