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

#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "analysis/chain.h"
#include "analysis/ras_report.h"
#include "gpu/nccl_ras.h"
#include "gpu/ras_stream.h"
#include "trace/ras_source.h"
#include "util/timeutil.h"

enum mode { M_JSON, M_TEXT, M_GARBAGE, M_SILENT, M_HUGE, M_TEXT_LONG };

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
				put(c, s->mode == M_TEXT || s->mode == M_TEXT_LONG ? "ERROR: Unknown command SET FORMAT json\n"
										   : "OK\n");
			else if (!strcasecmp(buf, "STATUS")) {
				if (s->mode == M_JSON)
					put(c, report);
				else if (s->mode == M_TEXT)
					put(c, "NCCL version 2.24.3 compiled with CUDA 12.8\n");
				else if (s->mode == M_TEXT_LONG) {
					static char txt[6000];

					memset(txt, 'r', sizeof(txt) - 1);
					put(c, txt);
				}
				else if (s->mode == M_HUGE) {
					/* 4 MiB of empty communicators, never closed. */
					static char blk[65535];

					for (size_t i = 0; i < sizeof(blk); i += 3)
						memcpy(blk + i, "{},", 3);
					put(c, "{\"communicators\": [");
					for (unsigned k = 0; k < 64; k++)
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

	/* A text report longer than the room kept: kept up to it, truncated. */
	start(&s, M_TEXT_LONG);
	o.port = s.port;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.state, CW_RAS_TEXT_ONLY);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(strlen(st.text), sizeof(st.text) - 1);

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

	/* A report past the cap is read to the cap, kept as read, truncated. */
	start(&s, M_HUGE);
	o.port = s.port;
	o.timeout_ms = 10000;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.state, CW_RAS_ANSWERED);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(st.ncomms, (CW_RAS_REPLY_MAX - 19) / 3);
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
	assert_int_equal(parse("{\"nccl_version\":\"1\",\"nccl_version\":\"2\"}", &st), -EBADMSG);
	assert_int_equal(parse("{\"communicators\":[{\"ranks\":[],\"ranks\":[]}]}", &st), -EBADMSG);
	assert_int_equal(parse("{\"communicators\":[{\"ranks\":[{\"rank\":1,\"rank\":2}]}]}", &st), -EBADMSG);
	assert_int_equal(parse("{\"communicators\":[]} x", &st), -EBADMSG);
	assert_int_equal(parse("{\"communicators\":[{}", &st), -EBADMSG);
	assert_string_equal(st.why, "the report ends early");
	assert_int_equal(parse("", &st), -EBADMSG);
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

/* The report read in pieces of every size gives what it gives whole. */
static void test_stream_splits(void **state)
{
	struct cw_ras_status whole, part;
	struct cw_ras_stream *s = malloc(sizeof(*s));
	size_t n = strlen(report);

	(void)state;
	assert_non_null(s);
	assert_int_equal(cw_ras_parse_json(report, n, &whole), 0);
	assert_int_equal(whole.comms[0].nbehind, 1);
	for (size_t step = 1; step < 64; step++) {
		cw_ras_stream_init(s, &part);
		for (size_t off = 0; off < n; off += step)
			assert_int_equal(cw_ras_stream_feed(s, report + off, off + step > n ? n - off : step), 0);
		assert_int_equal(cw_ras_stream_end(s, 0), 0);
		assert_memory_equal(&whole, &part, sizeof(whole));
	}
	free(s);
}

/* Ranks behind the most, found in one pass: the most rises after ranks
 * were read (all of them become behind), and 40 behind list 16. */
static void test_stream_behind(void **state)
{
	char doc[8192];
	size_t off;
	struct cw_ras_status st;

	(void)state;
	off = (size_t)snprintf(doc, sizeof(doc), "{\"communicators\":[{\"ranks\":[");
	for (int r = 0; r < 40; r++)
		off += (size_t)snprintf(doc + off, sizeof(doc) - off, "%s{\"rank\":%d,\"collective_counts\":{\"x\":%d}}",
					r ? "," : "", r, r == 20 ? 9 : r < 20 ? 5 : 3);
	off += (size_t)snprintf(doc + off, sizeof(doc) - off, "]}]}");
	assert_int_equal(cw_ras_parse_json(doc, off, &st), 0);
	assert_int_equal(st.comms[0].max_collectives, 9);
	assert_int_equal(st.comms[0].min_collectives, 3);
	assert_int_equal(st.comms[0].nbehind, CW_RAS_MAX_LISTED);
	for (int k = 0; k < CW_RAS_MAX_LISTED; k++)
		assert_int_equal(st.comms[0].behind[k].rank, k);
	/* Ranks at the most are not behind. */
	off = (size_t)snprintf(doc, sizeof(doc), "{\"communicators\":[{\"ranks\":[{\"rank\":0,\"collective_counts\":"
			       "{\"x\":9}},{\"rank\":1,\"collective_counts\":{\"x\":9}},{\"rank\":2,"
			       "\"collective_counts\":{\"x\":1}}]}]}");
	assert_int_equal(cw_ras_parse_json(doc, off, &st), 0);
	assert_int_equal(st.comms[0].nbehind, 1);
	assert_int_equal(st.comms[0].behind[0].rank, 2);
	/* A rank value over the piece cap is skipped, the answer marked truncated. */
	{
		char *big = malloc(CW_RAS_PIECE_MAX + 200);

		assert_non_null(big);
		off = (size_t)snprintf(big, 200, "{\"communicators\":[{\"ranks\":[{\"host\":\"");
		memset(big + off, 'a', CW_RAS_PIECE_MAX);
		off += CW_RAS_PIECE_MAX;
		off += (size_t)snprintf(big + off, 100, "\"},{\"rank\":7}]}]}");
		assert_int_equal(cw_ras_parse_json(big, off, &st), 0);
		assert_int_equal(st.truncated, 1);
		assert_int_equal(st.ncomms, 1);
		free(big);
	}
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* 4 MiB of empty objects, fed as it would arrive: the parser's memory
 * does not grow with it (a jansson tree of it is ~300 MB). */
static void test_stream_memory(void **state)
{
	static char blk[65535];
	struct cw_ras_status st;
	struct cw_ras_stream *s = malloc(sizeof(*s));
	long before;

	(void)state;
	assert_non_null(s);
	for (size_t i = 0; i < sizeof(blk); i += 3)
		memcpy(blk + i, "{},", 3);
	before = maxrss_kb();
	cw_ras_stream_init(s, &st);
	assert_int_equal(cw_ras_stream_feed(s, "{\"communicators\": [{\"ranks\": [", 30), 0);
	for (int k = 0; k < 64; k++)
		assert_int_equal(cw_ras_stream_feed(s, blk, sizeof(blk)), 0);
	assert_int_equal(cw_ras_stream_feed(s, "{}]}]}", 6), 0);
	assert_int_equal(cw_ras_stream_end(s, 0), 0);
	assert_int_equal(st.ncomms, 1);
#ifndef __SANITIZE_ADDRESS__
	/* Under ASan freed memory sits in its quarantine (hundreds of MB): the
	 * bound is measured by the plain build (and the fuzzer checks the rest). */
	assert_true(maxrss_kb() - before < 4096);
#else
	(void)before;
#endif
	free(s);
}

struct canceller {
	int fd;
};

static void *cancel_soon(void *arg)
{
	struct canceller *c = arg;
	uint64_t one = 1;
	struct timespec ts = {0, 200 * 1000000L};

	nanosleep(&ts, NULL);
	if (write(c->fd, &one, sizeof(one)) != sizeof(one))
		return NULL;
	return NULL;
}

/* A stop ends an exchange with a silent service at once. */
static void test_cancel(void **state)
{
	struct srv s;
	struct cw_ras_status st;
	struct canceller c = {.fd = eventfd(0, EFD_CLOEXEC)};
	struct cw_ras_opts o = {.host = "127.0.0.1", .timeout_ms = 10000};
	pthread_t th;
	uint64_t t0;

	(void)state;
	assert_true(c.fd > 0);
	o.cancel_fd = c.fd;
	start(&s, M_SILENT);
	o.port = s.port;
	assert_int_equal(pthread_create(&th, NULL, cancel_soon, &c), 0);
	t0 = cw_monotonic_ns();
	assert_int_equal(cw_ras_query(&o, &st), 0);
	assert_true(cw_monotonic_ns() - t0 < 1000000000ULL);
	assert_int_equal(st.state, CW_RAS_NO_ANSWER);
	assert_string_equal(st.why, "stopped before an answer");
	pthread_join(th, NULL);
	finish(&s);
	close(c.fd);
}

static int verify_pids(void *arg, int fd, char *why, size_t wlen)
{
	const uint32_t *pid = arg;

	return trace_ras_source_check(fd, pid, 1, NULL, why, wlen);
}

/* The listener is matched to the processes that hold it: this test's own
 * (it listens) is verified, pid 1 is not. */
static void test_source(void **state)
{
	struct srv s;
	struct cw_ras_status st;
	uint32_t me = (uint32_t)getpid(), init = 1;
	struct cw_ras_opts o = {.host = "127.0.0.1", .verify = verify_pids, .verify_arg = &me};
	json_t *j;

	(void)state;
	start(&s, M_JSON);
	o.port = s.port;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.source, CW_RAS_SOURCE_VERIFIED);
	assert_non_null(strstr(st.source_why, "is held by rank process"));
	j = cw_ras_status_json(&st);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "answered");
	json_decref(j);

	/* A process holding a socket, not the listener: not vouched for. */
	{
		int sv[2];
		pid_t child;
		uint32_t other;

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		child = fork();
		assert_true(child >= 0);
		if (child == 0) {
			char c;

			close(sv[0]);
			if (read(sv[1], &c, 1) < 0)
				_exit(1);
			_exit(0);
		}
		close(sv[1]);
		other = (uint32_t)child;
		o.verify_arg = &other;
		start(&s, M_JSON);
		o.port = s.port;
		/* The child forked before the listener: it holds only its end of the pair. */
		assert_int_equal(cw_ras_query(&o, &st), 0);
		finish(&s);
		close(sv[0]);
		waitpid(child, NULL, 0);
		assert_int_equal(st.source, CW_RAS_SOURCE_UNVERIFIED);
	}

	o.verify_arg = &init;
	start(&s, M_JSON);
	o.port = s.port;
	assert_int_equal(cw_ras_query(&o, &st), 0);
	finish(&s);
	assert_int_equal(st.state, CW_RAS_ANSWERED);
	assert_int_equal(st.source, CW_RAS_SOURCE_UNVERIFIED);
	assert_non_null(strstr(st.source_why, "is held by none of the job's 1 rank process"));
	j = cw_ras_status_json(&st);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "unverified");
	assert_string_equal(json_string_value(json_object_get(j, "answer")), "answered");
	json_decref(j);
}

/* NCCL_RAS_ADDR and NCCL_RAS_ENABLE from a rank's environment. */
static void test_source_env(void **state)
{
	char dir[] = "/tmp/cw-ras-env.XXXXXX", path[128], host[64] = "";
	static const char env[] = "A=1\0NCCL_RAS_ADDR=[::1]:29001\0NCCL_RAS_ENABLE=0\0B";
	int enabled = 1, port = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/77", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/77/environ", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite(env, 1, sizeof(env) - 1, f);
	fclose(f);
	assert_int_equal(trace_ras_source_env(77, dir, &enabled, host, sizeof(host), &port), 0);
	assert_int_equal(enabled, 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 29001);
	assert_true(trace_ras_source_env(78, dir, &enabled, host, sizeof(host), &port) < 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/77", dir);
	rmdir(path);
	rmdir(dir);
}

/* explain's line tells not asked, asked without an answer, truncated,
 * unverified and answered apart; an answer too long for the chain keeps
 * its status with its lists cut, never dropped. */
static void test_report_text(void **state)
{
	struct cw_chain *c = calloc(1, sizeof(*c));
	char line[1600];
	json_t *d, *comms;

	(void)state;
	assert_non_null(c);
	cw_chain_ras_text(c, line, sizeof(line));
	assert_true(!strncmp(line, "not asked (", 11));
	snprintf(c->ras, sizeof(c->ras), "{\"status\":\"no_answer\",\"why\":\"stopped before an answer\"}");
	cw_chain_ras_text(c, line, sizeof(line));
	assert_string_equal(line, "asked, did not answer (stopped before an answer)");
	snprintf(c->ras, sizeof(c->ras), "{\"status\":\"answered\",\"truncated\":true,\"nccl_version\":\"2.29.1\","
		 "\"communicators\":3}");
	cw_chain_ras_text(c, line, sizeof(line));
	assert_string_equal(line, "answered, answer truncated at 1 MiB or a value over 16 KiB skipped (NCCL 2.29.1, 3 communicators)");
	snprintf(c->ras, sizeof(c->ras), "{\"status\":\"unverified\",\"answer\":\"answered\",\"source_why\":\"w\","
		 "\"nccl_version\":\"2.29.1\",\"communicators\":1}");
	cw_chain_ras_text(c, line, sizeof(line));
	assert_string_equal(line, "answered by a listener not of the traced job, unverified (w): it claims (NCCL 2.29.1, 1 communicator)");
	snprintf(c->ras, sizeof(c->ras), "{\"status\":\"answered\",\"nccl_version\":\"2.29.1\",\"communicators\":1}");
	cw_chain_ras_text(c, line, sizeof(line));
	assert_string_equal(line, "answered (NCCL 2.29.1, 1 communicator)");

	/* 8 communicators of 32 listed ranks with 63-byte control hosts:
	 * ~100 KiB, fitted into the chain's room. */
	d = json_pack("{s:s, s:i}", "status", "answered", "communicators", 8);
	comms = json_array();
	for (int k = 0; k < 8; k++) {
		json_t *co = json_pack("{s:s, s:[], s:[]}", "hash", "0x1", "behind", "missing");
		char host[64];

		memset(host, 0x01, 63);
		host[63] = '\0';
		for (int r = 0; r < 16; r++) {
			json_array_append_new(json_object_get(co, "behind"), json_pack("{s:i, s:s}", "rank", r, "host", host));
			json_array_append_new(json_object_get(co, "missing"), json_pack("{s:i, s:s}", "rank", r, "host", host));
		}
		json_array_append_new(comms, co);
	}
	json_object_set_new(d, "comms", comms);
	assert_int_equal(cw_ras_fit(d, c->ras, sizeof(c->ras)), 0);
	json_decref(d);
	assert_true(strlen(c->ras) < sizeof(c->ras));
	d = json_loads(c->ras, 0, NULL);
	assert_non_null(d);
	assert_string_equal(json_string_value(json_object_get(d, "status")), "answered");
	assert_true(json_is_true(json_object_get(d, "listed_cut")));
	assert_true(json_array_size(json_object_get(json_array_get(json_object_get(d, "comms"), 0), "behind")) > 0);
	json_decref(d);
	cw_chain_ras_text(c, line, sizeof(line));
	assert_true(!strncmp(line, "answered, lists cut to fit (NCCL", 32));
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answered),
		cmocka_unit_test(test_not_answered),
		cmocka_unit_test(test_hostile_reports),
		cmocka_unit_test(test_stream_splits),
		cmocka_unit_test(test_stream_behind),
		cmocka_unit_test(test_stream_memory),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_source),
		cmocka_unit_test(test_source_env),
		cmocka_unit_test(test_report_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
