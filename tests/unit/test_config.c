/* The config file parser, node naming, address/size parsing, and the
 * server and fleet helpers that are pure functions (Prometheus label
 * escaping, the skew estimate, the token comparison). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "config/config.h"
#include "fleet/fanout.h"
#include "fleet/skew.h"
#include "metrics/prom_text.h"
#include "util/strbuf.h"

static int parse(const char *text, struct cw_config *c, char *err)
{
	return cw_config_parse(text, strlen(text), "t.yaml", "/etc/cw", c, err, 512);
}

static void test_full_file(void **state)
{
	const char *y = "# a comment\n"
			"node: gpu-node-07\n"
			"store:\n"
			"  path: /var/lib/causeway/causeway.db\n"
			"  max_size: 2GiB\n"
			"server:\n"
			"  listen: 0.0.0.0:7070\n"
			"  tls:\n"
			"    cert: server.crt\n"
			"    key: /etc/cw/server.key\n"
			"    client_ca: ~/ca.crt\n"
			"  token_file: token\n"
			"  max_rows: 5000\n"
			"  timeout: 3s\n"
			"fleet:\n"
			"  nodes: [a:7070, \"b.example:7071\", \"[::1]:7072\"]\n"
			"  ca_cert: ca.crt\n"
			"  timeout: 1500ms\n"
			"  skew_warn: 20ms\n";
	struct cw_config c;
	char err[512];

	setenv("HOME", "/home/u", 1);
	assert_int_equal(parse(y, &c, err), 0);
	assert_string_equal(c.node, "gpu-node-07");
	assert_string_equal(c.store_path, "/var/lib/causeway/causeway.db");
	assert_true(c.store_max_bytes == 2ULL << 30);
	assert_string_equal(c.server_listen, "0.0.0.0:7070");
	/* Relative paths resolve next to the config file; ~ to $HOME. */
	assert_string_equal(c.tls_cert, "/etc/cw/server.crt");
	assert_string_equal(c.tls_key, "/etc/cw/server.key");
	assert_string_equal(c.tls_client_ca, "/home/u/ca.crt");
	assert_string_equal(c.server_token_file, "/etc/cw/token");
	assert_int_equal(c.server_max_rows, 5000);
	assert_true(c.server_timeout_ns == 3000000000ULL);
	assert_int_equal(c.nfleet_nodes, 3);
	assert_string_equal(c.fleet_nodes[1], "b.example:7071");
	assert_string_equal(c.fleet_nodes[2], "[::1]:7072");
	assert_true(c.fleet_timeout_ns == 1500000000ULL);
	assert_true(c.fleet_skew_warn_ns == 20000000ULL);
	cw_config_free(&c);
}

static void test_nodes_as_string_and_empty(void **state)
{
	struct cw_config c;
	char err[512];

	assert_int_equal(parse("fleet:\n  nodes: \"h1:1,h2:2\"\n", &c, err), 0);
	assert_int_equal(c.nfleet_nodes, 2);
	assert_string_equal(c.fleet_nodes[0], "h1:1");
	cw_config_free(&c);
	/* An explicitly empty mapping is a valid config of defaults... */
	assert_int_equal(parse("{}\n", &c, err), 0);
	assert_null(c.node);
	cw_config_free(&c);
	assert_int_equal(parse("---\nnode: a\n...\n", &c, err), 0);
	assert_string_equal(c.node, "a");
	cw_config_free(&c);
	assert_int_equal(parse("store:\n", &c, err), 0);
	cw_config_free(&c);
}

static void expect_error(const char *y, const char *needle);

/* ...a file without any document, or with more than one, is an error. */
static void test_empty_and_multi_document(void **state)
{
	(void)state;
	expect_error("", "config \"t.yaml\" is empty (no settings); write {} for the defaults");
	expect_error("# all commented out\n# node: a\n", "is empty (no settings)");
	expect_error("~\n", "is empty (no settings)");
	expect_error("node: a\n---\nnode: b\n", "config \"t.yaml\" line 2: a second YAML document");
	expect_error("node: a\n--- \n", "line 2: a second YAML document");
	expect_error("---\nnode: a\n---\nstore: {path: x.db}\n---\n{}\n", "line 3: a second YAML");
	/* A second document that does not parse is reported as such. */
	expect_error("node: a\n---\n[\n", "t.yaml\" line");
}

static void test_bounded_echo(void **state)
{
	char y[6000], err[512];
	struct cw_config c;

	(void)state;
	snprintf(y, sizeof(y), "node: %.5000s\n",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	assert_int_equal(parse(y, &c, err), -EINVAL);
	/* 64 bytes of the name and an ellipsis, not the whole name. */
	assert_non_null(strstr(err, "bad node name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				    "aaaaaaaaaaaaaaaa...\" (1-63 of"));
	assert_int_equal(parse("server:\n  max_rows: 5x\n", &c, err), -EINVAL);
	assert_non_null(strstr(err, "\"server.max_rows\": bad count \"5x\""));
	assert_int_equal(parse("server:\n  max_rows: -3\n", &c, err), -EINVAL);
	assert_int_equal(parse("server:\n  max_rows: 0x10\n", &c, err), -EINVAL);
	assert_int_equal(parse("server:\n  max_rows: 16\n", &c, err), 0);
	assert_int_equal(c.server_max_rows, 16);
	cw_config_free(&c);
}

static void expect_error(const char *y, const char *needle)
{
	struct cw_config c;
	char err[512] = "";

	assert_int_equal(parse(y, &c, err), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" lacks \"%s\"", err, needle);
	cw_config_free(&c);
}

static void test_errors_name_the_line(void **state)
{
	expect_error("node: a\nbogus: 1\n", "line 2: unknown key \"bogus\"");
	expect_error("server:\n  listen: 1.2.3.4:7070\n  tls:\n    kee: x\n",
		     "line 4: unknown key \"server.tls.kee\"");
	expect_error("store:\n  max_size: lots\n", "line 2: \"store.max_size\": bad size \"lots\"");
	expect_error("server:\n  listen: nowhere\n", "line 2: \"server.listen\": bad address");
	expect_error("server:\n  listen: h:70000\n", "bad address");
	expect_error("fleet:\n  timeout: -1s\n", "line 2: \"fleet.timeout\": bad duration");
	expect_error("fleet:\n  nodes: [a:1, b]\n", "line 2: fleet.nodes: bad address \"b\"");
	expect_error("node: \"bad name!\"\n", "line 1: bad node name");
	expect_error("node: [a, b]\n", "\"node\" must be a single value");
	expect_error("server: 5\n", "\"server\" must be a mapping");
	expect_error("node: a\nnode: b\n", "line 2: duplicate key \"node\"");
	expect_error("server:\n  max_rows: 0\n", "bad count");
	expect_error("node: a\n  - b: [\n", "t.yaml\" line");
	expect_error("- a\n- b\n", "must be a mapping");
	expect_error("gpu:\n  interval: soon\n", "line 2: \"gpu.interval\": bad duration");
	expect_error("gpu:\n  sample: 1s\n", "line 2: unknown key \"gpu.sample\"");
}

static void test_gpu_keys(void **state)
{
	struct cw_config c;
	char err[512];

	(void)state;
	assert_int_equal(parse("gpu:\n  nvml_lib: lib/libnvidia-ml.so.1\n  interval: 250ms\n  stall_after: 2m\n", &c, err),
			 0);
	assert_string_equal(c.gpu_nvml_lib, "/etc/cw/lib/libnvidia-ml.so.1");
	assert_true(c.gpu_interval_ns == 250000000ULL);
	assert_true(c.gpu_stall_after_ns == 120000000000ULL);
	cw_config_free(&c);
}

static void test_load_files(void **state)
{
	char dir[] = "/tmp/cw-config-XXXXXX", path[256], err[512];
	struct cw_config c;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/causeway.yaml", dir);
	assert_int_equal(cw_config_load(path, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
	f = fopen(path, "w");
	fputs("node: from-file\nstore:\n  path: my.db\n", f);
	fclose(f);
	assert_int_equal(cw_config_load(path, &c, err, sizeof(err)), 0);
	assert_string_equal(c.node, "from-file");
	assert_string_equal(c.source, path);
	{
		char want[300];

		snprintf(want, sizeof(want), "%s/my.db", dir);
		assert_string_equal(c.store_path, want);
	}
	cw_config_free(&c);
	/* The user default (~/.causeway/causeway.yaml) when none is named. */
	if (access(CW_CONFIG_SYSTEM_PATH, F_OK) != 0) {
		char home[300];

		snprintf(home, sizeof(home), "%s/.causeway", dir);
		mkdir(home, 0700);
		snprintf(path, sizeof(path), "%s/.causeway/causeway.yaml", dir);
		f = fopen(path, "w");
		fputs("node: user-default\n", f);
		fclose(f);
		setenv("HOME", dir, 1);
		assert_int_equal(cw_config_load(NULL, &c, err, sizeof(err)), 0);
		assert_string_equal(c.node, "user-default");
		cw_config_free(&c);
		unlink(path);
		rmdir(home);
		/* No file anywhere: an empty config, not an error. */
		assert_int_equal(cw_config_load(NULL, &c, err, sizeof(err)), 0);
		assert_null(c.source);
		cw_config_free(&c);
	}
	snprintf(path, sizeof(path), "%s/causeway.yaml", dir);
	unlink(path);
	rmdir(dir);
}

static void test_node_name_precedence(void **state)
{
	struct cw_config c = { 0 };
	char host[256] = "";

	c.node = "from-config";
	cw_global_node = "from-flag";
	assert_string_equal(cw_node_name(&c), "from-flag");
	cw_global_node = NULL;
	assert_string_equal(cw_node_name(&c), "from-config");
	gethostname(host, sizeof(host) - 1);
	if (strlen(host) < CW_NODE_NAME_MAX)
		assert_string_equal(cw_node_name(NULL), host);
	assert_true(cw_node_name_valid("gpu-07.rack_3"));
	assert_false(cw_node_name_valid(""));
	assert_false(cw_node_name_valid("a b"));
	assert_false(cw_node_name_valid("x\"y"));
}

static void test_hostport_and_size(void **state)
{
	char h[64];
	uint64_t b;
	int p;

	assert_int_equal(cw_parse_hostport("10.0.0.1:7070", h, sizeof(h), &p), 0);
	assert_string_equal(h, "10.0.0.1");
	assert_int_equal(p, 7070);
	assert_int_equal(cw_parse_hostport("[fe80::1]:443", h, sizeof(h), &p), 0);
	assert_string_equal(h, "fe80::1");
	assert_int_equal(cw_parse_hostport("fe80::1:443", h, sizeof(h), &p), -EINVAL);
	assert_int_equal(cw_parse_hostport("host:0", h, sizeof(h), &p), -EINVAL);
	assert_int_equal(cw_parse_hostport("host:", h, sizeof(h), &p), -EINVAL);
	assert_int_equal(cw_parse_hostport(":80", h, sizeof(h), &p), -EINVAL);
	assert_int_equal(cw_parse_hostport("host:80x", h, sizeof(h), &p), -EINVAL);
	assert_int_equal(cw_parse_size("512MiB", &b), 0);
	assert_true(b == 512ULL << 20);
	assert_int_equal(cw_parse_size("10GB", &b), 0);
	assert_true(b == 10000000000ULL);
	assert_int_equal(cw_parse_size("4096", &b), 0);
	assert_true(b == 4096);
	assert_int_equal(cw_parse_size("-1G", &b), -EINVAL);
	assert_int_equal(cw_parse_size("1 parsec", &b), -EINVAL);
}

static void test_fleet_nodes_flag(void **state)
{
	char **v, err[256];

	assert_int_equal(cw_fleet_parse_nodes("a:1,https://b:2,http://c:3", &v, err, sizeof(err)), 3);
	assert_string_equal(v[1], "https://b:2");
	assert_null(v[3]);
	cw_fleet_free_nodes(v);
	assert_int_equal(cw_fleet_parse_nodes("a:1,,b", &v, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "\"b\""));
	assert_int_equal(cw_fleet_parse_nodes("", &v, err, sizeof(err)), -EINVAL);
}

static void test_prom_escape(void **state)
{
	struct strbuf sb;

	strbuf_init(&sb, 0);
	assert_int_equal(cw_prom_escape_label(&sb, "a\"b\\c\nd"), 0);
	assert_string_equal(strbuf_str(&sb), "a\\\"b\\\\c\\nd");
	strbuf_reset(&sb);
	assert_int_equal(cw_prom_sanitize_name(&sb, "9ring-drops.x"), 0);
	assert_string_equal(strbuf_str(&sb), "_9ring_drops_x");
	strbuf_release(&sb);
}

static void test_skew_median(void **state)
{
	/* Server 250 ms ahead; one sample delayed on the way back (its offset
	 * is skewed by half its extra RTT) must not move the median. */
	const uint64_t base = 1700000000000000000ULL, ms = 1000000ULL;
	struct cw_skew_sample s[5] = {
		{ base, base + 2 * ms, base + 1 * ms + 250 * ms },
		{ base + 10 * ms, base + 12 * ms, base + 11 * ms + 250 * ms },
		{ base + 20 * ms, base + 80 * ms, base + 21 * ms + 250 * ms }, /* slow return */
		{ base + 90 * ms, base + 92 * ms, base + 91 * ms + 251 * ms },
		{ base + 100 * ms, base + 102 * ms, base + 101 * ms + 249 * ms },
	};
	struct cw_skew k;

	assert_int_equal(cw_skew_compute(s, 5, &k), 0);
	assert_true(k.valid);
	assert_int_equal(k.samples, 5);
	assert_true(k.offset_ns == (int64_t)(250 * ms));
	assert_true(k.rtt_ns == 2 * ms);
	assert_true(cw_skew_to_local(&k, base + 250 * ms) == base);
	/* Too few samples: not valid, never a crash. */
	assert_int_equal(cw_skew_compute(s, 2, &k), -EAGAIN);
	assert_false(k.valid);
	assert_int_equal(cw_skew_compute(s, 0, &k), -EAGAIN);
	/* Three answers of five delayed on the way back: the median of all
	 * offsets would be off by 10 ms, the faster half's is exact. */
	{
		struct cw_skew_sample d[5] = {
			{ base, base + 2 * ms, base + 1 * ms + 250 * ms },
			{ base + 10 * ms, base + 32 * ms, base + 11 * ms + 250 * ms },
			{ base + 40 * ms, base + 62 * ms, base + 41 * ms + 250 * ms },
			{ base + 70 * ms, base + 92 * ms, base + 71 * ms + 250 * ms },
			{ base + 100 * ms, base + 102 * ms, base + 101 * ms + 250 * ms },
		};
		assert_int_equal(cw_skew_compute(d, 5, &k), 0);
		assert_true(k.offset_ns == (int64_t)(250 * ms));
		assert_true(k.rtt_ns == 22 * ms);
		assert_true(k.spread_ns == 10 * ms);
	}
	/* A clock behind gives a negative offset. */
	{
		struct cw_skew_sample b[3] = {
			{ base, base + 2 * ms, base - 99 * ms },
			{ base + 5 * ms, base + 7 * ms, base - 94 * ms },
			{ base + 9 * ms, base + 11 * ms, base - 90 * ms },
		};
		assert_int_equal(cw_skew_compute(b, 3, &k), 0);
		assert_true(k.offset_ns == -(int64_t)(100 * ms));
	}
}

/* The commented example in the repository must stay a valid config. */
static void test_example_file(void **state)
{
	struct cw_config c;
	char err[512];

	if (access("deploy/causeway.example.yaml", R_OK)) {
		skip();
		return;
	}
	if (cw_config_load("deploy/causeway.example.yaml", &c, err, sizeof(err)))
		fail_msg("%s", err);
	assert_string_equal(c.node, "gpu-node-07");
	assert_int_equal(c.nfleet_nodes, 4);
	assert_non_null(c.tls_client_ca);
	assert_string_equal(c.otlp_endpoint, "http://otel-collector.monitoring:4318");
	cw_config_free(&c);
}

/* Nesting past the cap is refused before libyaml builds the document
 * (its loader is quadratic in the depth), with the line it happens on; a
 * depth the cap allows still reaches the key check. */
static void test_nesting_capped(void **state)
{
	enum { DEEP = 200000 };
	struct cw_config c;
	char err[512], *t = malloc(2 * DEEP + 8);
	struct timespec a, b;
	int i;

	(void)state;
	assert_non_null(t);
	memcpy(t, "a: ", 3);
	for (i = 0; i < DEEP; i++)
		t[3 + i] = '[';
	for (i = 0; i < DEEP; i++)
		t[3 + DEEP + i] = ']';
	t[3 + 2 * DEEP] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(parse(t, &c, err), -EINVAL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_non_null(strstr(err, "nested deeper than 32 levels"));
	assert_true(b.tv_sec - a.tv_sec < 2);
	strcpy(t, "a: [[[[1]]]]\n");
	assert_int_equal(parse(t, &c, err), -EINVAL);
	assert_non_null(strstr(err, "unknown key"));
	free(t);
}

static void test_otlp_keys(void **state)
{
	static const char ok[] = "otlp:\n  endpoint: https://c:4318\n  interval: 2s\n"
				 "  queue: 5\n  ca_cert: ca.pem\n";
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "otlp:\n  endpoint: ftp://x\n", "not an http:// or https:// URL" },
		{ "otlp:\n  interval: 500ms\n", "at least 1s" },
		{ "otlp:\n  queue: 0\n", "1 to 10000 payloads" },
		{ "otlp:\n  queue: 10001\n", "1 to 10000 payloads" },
		{ "otlp:\n  queue: 5x\n", "bad count" },
		{ "otlp:\n  port: 1\n", "otlp.port" },
	};
	struct cw_config c;
	char err[512];

	(void)state;
	assert_int_equal(cw_config_parse(ok, sizeof(ok) - 1, "t.yaml", "/etc/cw", &c, err, sizeof(err)), 0);
	assert_string_equal(c.otlp_endpoint, "https://c:4318");
	assert_true(c.otlp_interval_ns == 2000000000ULL);
	assert_int_equal(c.otlp_queue, 5);
	assert_string_equal(c.otlp_ca_cert, "/etc/cw/ca.pem");
	cw_config_free(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cw_config_parse(bad[i].text, strlen(bad[i].text), "t.yaml", NULL, &c,
						 err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].want))
			fail_msg("%s: got \"%s\"", bad[i].text, err);
		cw_config_free(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_nodes_as_string_and_empty),
		cmocka_unit_test(test_empty_and_multi_document),
		cmocka_unit_test(test_bounded_echo),
		cmocka_unit_test(test_errors_name_the_line),
		cmocka_unit_test(test_gpu_keys),
		cmocka_unit_test(test_load_files),
		cmocka_unit_test(test_node_name_precedence),
		cmocka_unit_test(test_hostport_and_size),
		cmocka_unit_test(test_fleet_nodes_flag),
		cmocka_unit_test(test_prom_escape),
		cmocka_unit_test(test_skew_median),
		cmocka_unit_test(test_example_file),
		cmocka_unit_test(test_otlp_keys),
		cmocka_unit_test(test_nesting_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
