/* The kubelet's pod list (src/tenant/kubelet.c): a canned PodList parsed
 * and validated as hostile input, and the fetch over real HTTP from a
 * loopback server (libmicrohttpd) with the size cap, a status other than
 * 200, a dead port, and the refresh-on-miss rate limit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/kubelet.h"
#include "util/strbuf.h"

#define UID_A "0e1d2c3b-4a59-6877-8695-a4b3c2d1e0f9"
#define UID_B "e1d2c3b4-a5f6-4789-8abc-def012345678"
#define UID_STATIC "6b1c5e2a9f0d4c3b8a7e6d5c4b3a2f1e" /* a static pod's config hash */

/* What a kubelet's /pods answers, trimmed: the fields causeway reads among
 * many it ignores, and items that must be refused. */
static const char canned[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":["
	"{\"metadata\":{\"name\":\"trainer-0\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\","
	"\"labels\":{\"app\":\"t\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\"}},"
	"{\"metadata\":{\"name\":\"video-transcode-7d9f\",\"namespace\":\"batch\",\"uid\":\"" UID_B "\"}},"
	"{\"metadata\":{\"name\":\"kube-apiserver-node1\",\"namespace\":\"kube-system\",\"uid\":\"" UID_STATIC "\"}},"
	/* refused: upper case, a dot in a namespace, a bad UID, a NUL inside a
	 * name, a name over 253, missing fields, wrong types */
	"{\"metadata\":{\"name\":\"Trainer\",\"namespace\":\"ml\",\"uid\":\"11111111-2222-3333-4444-555555555555\"}},"
	"{\"metadata\":{\"name\":\"x\",\"namespace\":\"a.b\",\"uid\":\"21111111-2222-3333-4444-555555555555\"}},"
	"{\"metadata\":{\"name\":\"x\",\"namespace\":\"ml\",\"uid\":\"../../etc/passwd-000000000000000000\"}},"
	"{\"metadata\":{\"name\":\"a\\u0000b\",\"namespace\":\"ml\",\"uid\":\"31111111-2222-3333-4444-555555555555\"}},"
	"{\"metadata\":{\"name\":\"x\",\"uid\":\"41111111-2222-3333-4444-555555555555\"}},"
	"{\"metadata\":{\"name\":7,\"namespace\":\"ml\",\"uid\":\"51111111-2222-3333-4444-555555555555\"}},"
	"{\"metadata\":\"nope\"}, 42, null]}";

static void parse_canned(void **state)
{
	struct cw_kubelet_pod *v;
	int n, skipped;

	(void)state;
	assert_int_equal(cw_kubelet_parse(canned, sizeof(canned) - 1, &v, &n, &skipped), 3);
	assert_int_equal(n, 3);
	assert_int_equal(skipped, 9);
	/* sorted by uid */
	assert_string_equal(v[0].uid, UID_A);
	assert_string_equal(v[0].name, "trainer-0");
	assert_string_equal(v[0].ns, "ml");
	assert_string_equal(v[1].uid, UID_STATIC);
	assert_string_equal(v[1].ns, "kube-system");
	assert_string_equal(v[2].uid, UID_B);
	assert_string_equal(v[2].name, "video-transcode-7d9f");
	free(v);
}

static void parse_hostile(void **state)
{
	static const char *const bad[] = {
		"", "not json", "[]", "{\"items\":{}}", "{\"kind\":\"PodList\"}", "{\"items\":[]", "null",
		/* a duplicate key makes the name ambiguous: the whole list is refused */
		"{\"items\":[{\"metadata\":{\"name\":\"a\",\"name\":\"b\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\"}}]}",
	};
	struct cw_kubelet_pod *v;
	struct strbuf sb;
	char *long_name;
	int n, skipped;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cw_kubelet_parse(bad[i], strlen(bad[i]), &v, &n, &skipped), -EINVAL);
		assert_null(v);
	}
	/* Only len bytes are read: a valid list cut short is not JSON. */
	assert_int_equal(cw_kubelet_parse(canned, 40, &v, &n, &skipped), -EINVAL);
	/* A UID listed twice names nothing for sure. */
	{
		static const char dup[] = "{\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ml\",\"uid\":\"" UID_A
					  "\"}},{\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\"}},"
					  "{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\",\"uid\":\"" UID_B "\"}}]}";
		assert_int_equal(cw_kubelet_parse(dup, sizeof(dup) - 1, &v, &n, &skipped), 1);
		assert_string_equal(v[0].name, "c");
		assert_int_equal(skipped, 2);
		free(v);
	}
	/* A name of 254 characters is refused, 253 kept. */
	long_name = malloc(300);
	for (int len = 253; len <= 254; len++) {
		char doc[600];

		memset(long_name, 'a', (size_t)len);
		long_name[len] = 0;
		snprintf(doc, sizeof(doc), "{\"items\":[{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"" UID_A "\"}}]}",
			 long_name);
		assert_int_equal(cw_kubelet_parse(doc, strlen(doc), &v, &n, &skipped), len == 253 ? 1 : 0);
		if (n)
			assert_int_equal(strlen(v[0].name), 253);
		free(v);
	}
	free(long_name);
	/* More pods than the cap: CW_KUBELET_MAX_PODS kept, the rest counted. */
	strbuf_init(&sb, 0);
	strbuf_adds(&sb, "{\"items\":[");
	for (int i = 0; i < CW_KUBELET_MAX_PODS + 5; i++)
		strbuf_addf(&sb, "%s{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ml\",\"uid\":\"%08x-0000-4000-8000-000000000000\"}}",
			    i ? "," : "", i, i);
	strbuf_adds(&sb, "]}");
	assert_false(sb.overflow);
	assert_int_equal(cw_kubelet_parse(strbuf_str(&sb), sb.len, &v, &n, &skipped), CW_KUBELET_MAX_PODS);
	assert_int_equal(skipped, 5);
	free(v);
	strbuf_release(&sb);
}

/* ---- a loopback kubelet ---- */

static int hits;

static ssize_t endless(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	if (pos > (uint64_t)CW_KUBELET_MAX_BODY + (1u << 20))
		return MHD_CONTENT_READER_END_OF_STREAM;
	memset(buf, ' ', max);
	return (ssize_t)max;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_len, void **ctx)
{
	struct MHD_Response *r;
	unsigned status = MHD_HTTP_OK;
	enum MHD_Result ret;

	(void)cls, (void)method, (void)version, (void)upload, (void)upload_len, (void)ctx;
	hits++;
	if (!strcmp(url, "/pods"))
		r = MHD_create_response_from_buffer(sizeof(canned) - 1, (void *)canned, MHD_RESPMEM_PERSISTENT);
	else if (!strcmp(url, "/big"))
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, endless, NULL, NULL);
	else {
		r = MHD_create_response_from_buffer(2, (void *)"no", MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_FORBIDDEN;
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static struct MHD_Daemon *d;
static unsigned port;

static int start(void **state)
{
	const union MHD_DaemonInfo *i;

	(void)state;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, answer, NULL,
			     MHD_OPTION_SOCK_ADDR, NULL, MHD_OPTION_END);
	if (!d)
		return -1;
	i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	port = i ? i->port : 0;
	return port ? 0 : -1;
}

static int stop(void **state)
{
	(void)state;
	MHD_stop_daemon(d);
	return 0;
}

static void fetch(void **state)
{
	char url[64], err[256], *body;
	size_t len;

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/pods", port);
	assert_int_equal(cw_kubelet_get(url, 2000, &body, &len, err, sizeof(err)), 0);
	assert_int_equal(len, sizeof(canned) - 1);
	assert_memory_equal(body, canned, len);
	free(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/nope", port);
	assert_int_equal(cw_kubelet_get(url, 2000, &body, &len, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "answered status 403"));
	assert_null(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/big", port);
	assert_int_equal(cw_kubelet_get(url, 10000, &body, &len, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "larger than"));
	assert_int_equal(cw_kubelet_get("file:///etc/passwd", 2000, &body, &len, err, sizeof(err)), -EINVAL);
	assert_int_equal(cw_kubelet_get("http://127.0.0.1:1/pods", 2000, &body, &len, err, sizeof(err)), -EIO);
}

static void lookup(void **state)
{
	struct cw_kubelet k;
	char url[64];
	const struct cw_kubelet_pod *p;
	uint64_t t = 1000000000000ULL;

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/pods", port);
	assert_int_equal(cw_kubelet_init(&k, url), 0);
	hits = 0;
	p = cw_kubelet_lookup(&k, UID_B, t);
	assert_non_null(p);
	assert_string_equal(p->name, "video-transcode-7d9f");
	assert_string_equal(p->ns, "batch");
	assert_int_equal(hits, 1);
	/* A known pod: no fetch. An unknown one: one fetch, then none for 2 s. */
	assert_non_null(cw_kubelet_lookup(&k, UID_A, t + 1000));
	assert_int_equal(hits, 1);
	assert_null(cw_kubelet_lookup(&k, "99999999-2222-3333-4444-555555555555", t + CW_KUBELET_MISS_EVERY_NS + 1));
	assert_int_equal(hits, 2);
	assert_null(cw_kubelet_lookup(&k, "99999999-2222-3333-4444-555555555555", t + CW_KUBELET_MISS_EVERY_NS + 2));
	assert_int_equal(hits, 2);
	/* Not a UID at all: never sent anywhere. */
	assert_null(cw_kubelet_lookup(&k, "../x", t + 10 * CW_KUBELET_MISS_EVERY_NS));
	assert_int_equal(hits, 2);
	/* An old list is refreshed; a failed refresh keeps the last good list. */
	free(k.url);
	k.url = strdup("http://127.0.0.1:1/pods");
	p = cw_kubelet_lookup(&k, UID_A, t + 2 * CW_KUBELET_MAX_AGE_NS);
	assert_non_null(p);
	assert_string_equal(p->name, "trainer-0");
	assert_int_equal(k.errors, 1);
	assert_true(k.last_error[0] != 0);
	cw_kubelet_free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_canned),
		cmocka_unit_test(parse_hostile),
		cmocka_unit_test_setup_teardown(fetch, start, stop),
		cmocka_unit_test_setup_teardown(lookup, start, stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
