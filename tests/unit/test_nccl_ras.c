/* The NCCL RAS client (gpu/nccl_ras.h) against servers on loopback run by
 * this test: the documented exchange with a JSON report, an NCCL before
 * 2.28.7 (no JSON), nothing listening, something that is not RAS, a
 * service that never answers (the deadline holds), and a report past the
 * size cap; and the report parser on hostile documents. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpu/nccl_ras.h"
#include "util/timeutil.h"

enum mode { M_JSON, M_TEXT, M_GARBAGE, M_SILENT, M_HUGE };

struct srv {
	int fd, port;
	enum mode mode;
	pthread_t th;
};

static const char report[] =
	"{\"nccl_version\": \"2.29.1\", \"communicators\": [{\"hash\": \"0xabc\", \"size\": 3, \"ranks_count\": 2,"
	" \"missing_ranks_count\": 1, \"ranks\": ["
	"{\"rank\": 0, \"host\": \"10.0.0.1\", \"pid\": 11, \"status\": {\"async_error\": 0},"
	" \"collective_counts\": {\"AllReduce\": 7, \"Broadcast\": 1}},"
	"{\"rank\": 2, \"host\": \"10.0.0.2\", \"pid\": 13, \"status\": {\"async_error\": 2},"
	" \"collective_counts\": {\"AllReduce\": 6, \"Broadcast\": 1}}],"
	" \"missing_ranks\": [{\"rank\": 1, \"host\": \"10.0.0.9\", \"pid\": 12,"
	" \"status\": {\"unresponsive\": true, \"considered_dead\": true}}]}],"
	" \"ras\": {\"collection_time_sec\": 0.1, \"timeouts_count\": 1}}\n";

static void put(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) < 0)
		return;
}

static void *serve(void *arg)
{
	struct srv *s = arg;
	int c = accept(s->fd, NULL, NULL);
	char buf[512];
	size_t n = 0;

	if (c < 0)
		return NULL;
	while (n < sizeof(buf) - 1) {
		ssize_t r = read(c, buf + n, sizeof(buf) - 1 - n);
		char *nl;

		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			if (s->mode == M_SILENT) {
				sleep(2); /* longer than the client's deadline */
				goto out;
			}
			if (!strncasecmp(buf, "CLIENT PROTOCOL ", 16))
				put(c, s->mode == M_GARBAGE ? "SSH-2.0-OpenSSH_9.6\r\n" : "SERVER PROTOCOL 2\n");
			else if (!strncasecmp(buf, "TIMEOUT ", 8))
				put(c, "OK\n");
			else if (!strcasecmp(buf, "SET FORMAT json"))
				put(c, s->mode == M_TEXT ? "ERROR: Unknown command SET FORMAT json\n" : "OK\n");
			else if (!strcasecmp(buf, "STATUS")) {
				if (s->mode == M_JSON)
					put(c, report);
				else if (s->mode == M_TEXT)
					put(c, "NCCL version 2.24.3 compiled with CUDA 12.8\n");
				else if (s->mode == M_HUGE) {
					static char blk[65536];

					memset(blk, ' ', sizeof(blk));
					for (unsigned k = 0; k <= CW_RAS_REPLY_MAX / sizeof(blk); k++)
						if (write(c, blk, sizeof(blk)) < 0)
							break;
				}
				goto out;
			}
			n -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, n + 1);
		}
	}
out:
	close(c);
	return NULL;
}

static void start(struct srv *s, enum mode m)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);

	s->mode = m;
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->fd >= 0);
	assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->fd, 4), 0);
	assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, serve, s), 0);
}

static void finish(struct srv *s)
{
	pthread_join(s->th, NULL);
	close(s->fd);
}

static void test_answered(void **state)
{
	struct srv s;
	struct cw_ras_status st;
	struct cw_ras_opts o = {.host = "127.0.0.1"};
	const struct cw_ras_comm *c;
	json_t *j;

	(void)state;
	start(&s, M_JSON);
	o.port = s.port;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.state, CW_RAS_ANSWERED);
	assert_string_equal(st.nccl_version, "2.29.1");
	assert_int_equal(st.ncomms, 1);
	assert_int_equal(st.timeouts, 1);
	c = &st.comms[0];
	assert_string_equal(c->hash, "0xabc");
	assert_int_equal(c->size, 3);
	assert_int_equal(c->max_collectives, 8);
	assert_int_equal(c->min_collectives, 7);
	assert_int_equal(c->nbehind, 1);
	assert_int_equal(c->behind[0].rank, 2);
	assert_int_equal(c->behind[0].pid, 13);
	assert_int_equal(c->behind[0].async_error, 2);
	assert_int_equal(c->async_errors, 1);
	assert_int_equal(c->missing_count, 1);
	assert_int_equal(c->missing[0].rank, 1);
	assert_true(c->missing[0].unresponsive && c->missing[0].dead);
	j = cw_ras_status_json(&st);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "answered");
	assert_int_equal(json_integer_value(json_array_get(json_object_get(json_array_get(json_object_get(j, "comms"), 0),
									    "missing_ranks"), 0)), 1);
	json_decref(j);
}

static void test_not_answered(void **state)
{
	struct srv s;
	struct cw_ras_status st;
	struct cw_ras_opts o = {.host = "127.0.0.1", .timeout_ms = 1000};
	uint64_t t0;
	int fd;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);

	(void)state;
	/* Nothing listens: a port bound and closed. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	close(fd);
	o.port = ntohs(a.sin_port);
	assert_int_equal(cw_ras_query(&o, &st), 0);
	assert_int_equal(st.state, CW_RAS_NO_ANSWER);
	assert_non_null(strstr(st.why, "Connection refused"));

	/* NCCL before 2.28.7: the text report, kept short. */
	start(&s, M_TEXT);
	o.port = s.port;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.state, CW_RAS_TEXT_ONLY);
	assert_string_equal(st.text, "NCCL version 2.24.3 compiled with CUDA 12.8\n");

	/* Not RAS. */
	start(&s, M_GARBAGE);
	o.port = s.port;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.state, CW_RAS_BAD_REPLY);

	/* Never answers: the deadline (1 s) holds. */
	start(&s, M_SILENT);
	o.port = s.port;
	t0 = cw_monotonic_ns();
	assert_int_equal(cw_ras_query(&o, &st), 0);
	assert_true(cw_monotonic_ns() - t0 < 2500000000ULL);
	assert_int_equal(st.state, CW_RAS_NO_ANSWER);
	assert_non_null(strstr(st.why, "timed out"));
	finish(&s);

	/* A report past the cap is refused, not read on. */
	start(&s, M_HUGE);
	o.port = s.port;
	o.timeout_ms = 10000;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.state, CW_RAS_BAD_REPLY);
	assert_string_equal(st.why, "report over 4 MiB");
}

static int parse(const char *s, struct cw_ras_status *st)
{
	return cw_ras_parse_json(s, strlen(s), st);
}

static void test_hostile_reports(void **state)
{
	struct cw_ras_status st;
	char big[8192];
	size_t off;

	(void)state;
	assert_int_equal(parse("[1,2]", &st), -EBADMSG);
	assert_int_equal(st.state, CW_RAS_BAD_REPLY);
	assert_int_equal(parse("{\"a\":1,\"a\":2}", &st), -EBADMSG);
	/* Wrong types are ignored, out-of-range numbers dropped. */
	assert_int_equal(parse("{\"nccl_version\":7,\"communicators\":[{\"hash\":[1],\"size\":\"4\","
					   "\"ranks\":[{\"rank\":-5,\"collective_counts\":{\"AllReduce\":-1}},3],"
					   "\"missing_ranks\":{}},5]}", &st), 0);
	assert_int_equal(st.ncomms, 1);
	assert_string_equal(st.nccl_version, "");
	assert_int_equal(st.comms[0].size, 0);
	assert_int_equal(st.comms[0].max_collectives, 0);
	/* Counts saturate. */
	assert_int_equal(parse("{\"communicators\":[{\"ranks\":[{\"collective_counts\":"
					   "{\"a\":9223372036854775807,\"b\":9223372036854775807,\"c\":3}}]}]}", &st), 0);
	assert_true(st.comms[0].max_collectives == UINT64_MAX);
	/* 40 ranks behind: 16 listed; 20 communicators: 8 kept, the ones in trouble. */
	off = (size_t)snprintf(big, sizeof(big), "{\"communicators\":[");
	for (int c = 0; c < 20; c++) {
		off += (size_t)snprintf(big + off, sizeof(big) - off, "%s{\"hash\":\"%d\",\"ranks\":[{\"collective_counts\":"
					"{\"x\":9}}", c ? "," : "", c);
		for (int r = 0; c == 17 && r < 40; r++)
			off += (size_t)snprintf(big + off, sizeof(big) - off, ",{\"rank\":%d,\"collective_counts\":{\"x\":1}}", r);
		off += (size_t)snprintf(big + off, sizeof(big) - off, "]}");
	}
	off += (size_t)snprintf(big + off, sizeof(big) - off, "]}");
	assert_true(off < sizeof(big));
	assert_int_equal(cw_ras_parse_json(big, off, &st), 0);
	assert_int_equal(st.ncomms, 20);
	{
		int found = 0;

		for (int c = 0; c < CW_RAS_MAX_COMMS; c++)
			if (!strcmp(st.comms[c].hash, "17")) {
				found = 1;
				assert_int_equal(st.comms[c].nbehind, CW_RAS_MAX_LISTED);
			}
		assert_true(found);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answered),
		cmocka_unit_test(test_not_answered),
		cmocka_unit_test(test_hostile_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
