/* The NCCL RAS client (nccl_ras.h): one bounded exchange with the
 * service, and its JSON report reduced to what a hang needs. */
#define _GNU_SOURCE
#include "gpu/nccl_ras.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/utf8.h"
#include "util/timeutil.h"

#define LINE_MAX_BYTES 1024

const char *cw_ras_state_name(enum cw_ras_state s)
{
	switch (s) {
	case CW_RAS_ANSWERED:
		return "answered";
	case CW_RAS_TEXT_ONLY:
		return "text_only";
	case CW_RAS_NO_ANSWER:
		return "no_answer";
	default:
		return "bad_reply";
	}
}

/* Milliseconds left until deadline (monotonic ns), at least 0. */
static int left_ms(uint64_t deadline)
{
	uint64_t now = cw_monotonic_ns();

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

static int wait_fd(int fd, short ev, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = ev};
	int r;

	do {
		r = poll(&p, 1, left_ms(deadline));
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

static int send_all(int fd, const char *s, uint64_t deadline)
{
	size_t n = strlen(s), off = 0;

	while (off < n) {
		ssize_t w = send(fd, s + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int e = wait_fd(fd, POLLOUT, deadline);
		if (e)
			return e;
	}
	return 0;
}

/* Reads into buf (cap bytes, NUL-terminated) until a newline (line) or
 * the end of the stream; returns the length, -ETIMEDOUT, -EMSGSIZE when
 * cap is reached first, -ECONNRESET/-EPIPE style errors, or -ENODATA for
 * a stream that ended before a line. */
static ssize_t read_until(int fd, char *buf, size_t cap, int line, uint64_t deadline)
{
	size_t n = 0;

	for (;;) {
		ssize_t r;

		if (n + 1 >= cap)
			return -EMSGSIZE;
		r = recv(fd, buf + n, cap - 1 - n, MSG_DONTWAIT);
		if (r > 0) {
			char *nl = line ? memchr(buf + n, '\n', (size_t)r) : NULL;

			n += (size_t)r;
			buf[n] = '\0';
			if (nl)
				return (ssize_t)n;
			continue;
		}
		if (r == 0) {
			buf[n] = '\0';
			return line ? -ENODATA : (ssize_t)n;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int e = wait_fd(fd, POLLIN, deadline);
		if (e)
			return e;
	}
}

static int connect_to(const struct cw_ras_opts *o, uint64_t deadline_connect, char *why, size_t wlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	const char *host = o->host && *o->host && strcmp(o->host, "localhost") ? o->host : "127.0.0.1";
	int port = o->port ? o->port : CW_RAS_DEFAULT_PORT, fd, e;

	memset(&ss, 0, sizeof(ss));
	if (port < 1 || port > 65535)
		return -EINVAL;
	/* Numeric addresses only: the service is on this host (its own
	 * NCCL_RAS_ADDR), never a name to resolve. */
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
		sl = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
		sl = sizeof(struct sockaddr_in6);
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		e = errno;
		snprintf(why, wlen, "connect %s:%d: %s", host, port, strerror(e));
		close(fd);
		return -ENOTCONN;
	}
	e = wait_fd(fd, POLLOUT, deadline_connect);
	if (!e) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			err = errno;
		e = err ? -err : 0;
	}
	if (e) {
		snprintf(why, wlen, "connect %s:%d: %s", host, port, strerror(-e));
		close(fd);
		return -ENOTCONN;
	}
	return fd;
}

/* One command and its one-line answer in line. */
static int command(int fd, const char *cmd, char *line, size_t cap, uint64_t deadline)
{
	ssize_t n;
	int e = send_all(fd, cmd, deadline);

	if (e)
		return e;
	n = read_until(fd, line, cap, 1, deadline);
	return n < 0 ? (int)n : 0;
}

static void no_answer(struct cw_ras_status *out, enum cw_ras_state st, const char *what, int err)
{
	out->state = st;
	if (err)
		snprintf(out->why, sizeof(out->why), "%s: %s", what, strerror(-err));
	else
		snprintf(out->why, sizeof(out->why), "%s", what);
}

int cw_ras_query(const struct cw_ras_opts *o, struct cw_ras_status *out)
{
	uint64_t now = cw_monotonic_ns();
	uint64_t deadline = now + (uint64_t)(o->timeout_ms ? o->timeout_ms : 12000) * 1000000ULL;
	uint64_t cdeadline = now + (uint64_t)(o->connect_ms ? o->connect_ms : 1000) * 1000000ULL;
	char line[LINE_MAX_BYTES], cmd[64];
	char *report = NULL;
	ssize_t n;
	int fd, e, ret = 0;

	memset(out, 0, sizeof(*out));
	fd = connect_to(o, cdeadline < deadline ? cdeadline : deadline, out->why, sizeof(out->why));
	if (fd == -ENOTCONN) {
		out->state = CW_RAS_NO_ANSWER;
		return 0;
	}
	if (fd < 0)
		return fd;
	e = command(fd, "CLIENT PROTOCOL " "2" "\n", line, sizeof(line), deadline);
	if (e) {
		no_answer(out, e == -EMSGSIZE ? CW_RAS_BAD_REPLY : CW_RAS_NO_ANSWER, "handshake", e);
		goto out;
	}
	if (strncasecmp(line, "SERVER PROTOCOL ", 16)) {
		no_answer(out, CW_RAS_BAD_REPLY, "not the NCCL RAS protocol", 0);
		goto out;
	}
	/* NCCL waits for its peers up to this long; our deadline covers it. */
	snprintf(cmd, sizeof(cmd), "TIMEOUT %u\n", (o->timeout_ms ? o->timeout_ms : 12000) / 2000 + 1);
	e = command(fd, cmd, line, sizeof(line), deadline);
	if (e || strncasecmp(line, "OK", 2)) {
		no_answer(out, e && e != -EMSGSIZE ? CW_RAS_NO_ANSWER : CW_RAS_BAD_REPLY, "timeout", e);
		goto out;
	}
	e = command(fd, "SET FORMAT json\n", line, sizeof(line), deadline);
	if (e) {
		no_answer(out, e == -EMSGSIZE ? CW_RAS_BAD_REPLY : CW_RAS_NO_ANSWER, "set format", e);
		goto out;
	}
	/* NCCL < 2.28.7 has no JSON: its text report, kept short. */
	if (strncasecmp(line, "OK", 2)) {
		e = send_all(fd, "STATUS\n", deadline);
		n = e ? e : read_until(fd, out->text, sizeof(out->text), 0, deadline);
		if (n == -EMSGSIZE || n >= 0) {
			out->state = CW_RAS_TEXT_ONLY;
			snprintf(out->why, sizeof(out->why), "no JSON report (NCCL before 2.28.7)");
		} else {
			no_answer(out, CW_RAS_NO_ANSWER, "status", (int)n);
		}
		goto out;
	}
	report = malloc(CW_RAS_REPLY_MAX + 1);
	if (!report) {
		ret = -ENOMEM;
		goto out;
	}
	e = send_all(fd, "STATUS\n", deadline);
	n = e ? e : read_until(fd, report, CW_RAS_REPLY_MAX + 1, 0, deadline);
	if (n < 0) {
		no_answer(out, n == -EMSGSIZE ? CW_RAS_BAD_REPLY : CW_RAS_NO_ANSWER,
			  n == -EMSGSIZE ? "report over 4 MiB" : "status", n == -EMSGSIZE ? 0 : (int)n);
		goto out;
	}
	(void)cw_ras_parse_json(report, (size_t)n, out);
out:
	free(report);
	close(fd);
	return ret;
}

/* --- the report ------------------------------------------------------ */

static void copy_str(char *dst, size_t cap, const json_t *v)
{
	const char *s = json_string_value(v);

	snprintf(dst, cap, "%s", s ? s : "");
}

static int64_t int_of(const json_t *v, int64_t lo, int64_t hi, int64_t dflt)
{
	json_int_t x;

	if (!json_is_integer(v))
		return dflt;
	x = json_integer_value(v);
	return x < lo || x > hi ? dflt : x;
}

static void rank_of(const json_t *r, struct cw_ras_rank *out)
{
	const json_t *st = json_object_get(r, "status");

	memset(out, 0, sizeof(*out));
	out->rank = (int)int_of(json_object_get(r, "rank"), 0, 1 << 24, -1);
	out->pid = int_of(json_object_get(r, "pid"), -1, 1 << 30, -1);
	copy_str(out->host, sizeof(out->host), json_object_get(r, "host"));
	if (json_is_object(st)) {
		out->async_error = (int)int_of(json_object_get(st, "async_error"), 0, 1 << 16, 0);
		out->abort = json_is_true(json_object_get(st, "abort_flag"));
		out->unresponsive = json_is_true(json_object_get(st, "unresponsive"));
		out->dead = json_is_true(json_object_get(st, "considered_dead"));
	}
}

static uint64_t collectives_of(const json_t *r)
{
	const json_t *cc = json_object_get(r, "collective_counts"), *v;
	const char *k;
	uint64_t sum = 0;
	int keys = 0;

	if (!json_is_object(cc))
		return 0;
	json_object_foreach((json_t *)cc, k, v) {
		int64_t x = int_of(v, 0, INT64_MAX, 0);

		(void)k;
		if (++keys > 64)
			break;
		sum = (uint64_t)x > UINT64_MAX - sum ? UINT64_MAX : sum + (uint64_t)x;
	}
	return sum;
}

static int trouble(const struct cw_ras_comm *c)
{
	return c->missing_count + c->nbehind + c->async_errors;
}

static void comm_of(const json_t *c, struct cw_ras_comm *out)
{
	const json_t *ranks = json_object_get(c, "ranks"), *miss = json_object_get(c, "missing_ranks"), *r;
	size_t i, n;
	int first = 1;

	memset(out, 0, sizeof(*out));
	copy_str(out->hash, sizeof(out->hash), json_object_get(c, "hash"));
	out->size = (int)int_of(json_object_get(c, "size"), 0, 1 << 24, 0);
	out->ranks_count = (int)int_of(json_object_get(c, "ranks_count"), 0, 1 << 24, 0);
	out->missing_count = (int)int_of(json_object_get(c, "missing_ranks_count"), 0, 1 << 24, 0);
	n = json_is_array(ranks) ? json_array_size(ranks) : 0;
	if (n > 65536)
		n = 65536;
	for (i = 0; i < n; i++) {
		uint64_t k = collectives_of(json_array_get(ranks, i));

		if (first || k > out->max_collectives)
			out->max_collectives = k;
		if (first || k < out->min_collectives)
			out->min_collectives = k;
		first = 0;
	}
	for (i = 0; i < n; i++) {
		struct cw_ras_rank rk;

		r = json_array_get(ranks, i);
		if (!json_is_object(r))
			continue;
		rank_of(r, &rk);
		rk.collectives = collectives_of(r);
		if (rk.async_error)
			out->async_errors++;
		if (rk.collectives < out->max_collectives) {
			if (out->nbehind < CW_RAS_MAX_LISTED)
				out->behind[out->nbehind] = rk;
			out->nbehind++;
		}
	}
	if (out->nbehind > CW_RAS_MAX_LISTED)
		out->nbehind = CW_RAS_MAX_LISTED;
	n = json_is_array(miss) ? json_array_size(miss) : 0;
	for (i = 0; i < n && out->nmissing_listed < CW_RAS_MAX_LISTED; i++) {
		r = json_array_get(miss, i);
		if (json_is_object(r))
			rank_of(r, &out->missing[out->nmissing_listed++]);
	}
	/* The listed count never exceeds what the report declares, and a
	 * report that lists more than it counts is counted by its list. */
	if (out->missing_count < out->nmissing_listed)
		out->missing_count = out->nmissing_listed;
}

int cw_ras_parse_json(const char *buf, size_t len, struct cw_ras_status *out)
{
	json_error_t jerr;
	json_t *root, *comms, *ras;
	size_t i, n;

	memset(out, 0, sizeof(*out));
	if (len > CW_RAS_REPLY_MAX) {
		no_answer(out, CW_RAS_BAD_REPLY, "report over 4 MiB", 0);
		return -EBADMSG;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(root)) {
		json_decref(root);
		no_answer(out, CW_RAS_BAD_REPLY, "the report is not a JSON object", 0);
		return -EBADMSG;
	}
	out->state = CW_RAS_ANSWERED;
	copy_str(out->nccl_version, sizeof(out->nccl_version), json_object_get(root, "nccl_version"));
	ras = json_object_get(root, "ras");
	if (json_is_object(ras))
		out->timeouts = (int)int_of(json_object_get(ras, "timeouts_count"), 0, 1 << 24, 0);
	comms = json_object_get(root, "communicators");
	n = json_is_array(comms) ? json_array_size(comms) : 0;
	if (n > 4096)
		n = 4096;
	for (i = 0; i < n; i++) {
		struct cw_ras_comm c;
		int slot = -1;

		if (!json_is_object(json_array_get(comms, i)))
			continue;
		comm_of(json_array_get(comms, i), &c);
		out->ncomms++;
		/* Keep the communicators with the most trouble. */
		if (out->ncomms <= CW_RAS_MAX_COMMS) {
			slot = out->ncomms - 1;
		} else {
			for (int k = 0; k < CW_RAS_MAX_COMMS; k++)
				if (trouble(&out->comms[k]) < trouble(&c) &&
				    (slot < 0 || trouble(&out->comms[k]) < trouble(&out->comms[slot])))
					slot = k;
		}
		if (slot >= 0)
			out->comms[slot] = c;
	}
	json_decref(root);
	return 0;
}

static json_t *rank_json(const struct cw_ras_rank *r, int missing)
{
	json_t *o = json_pack("{s:i, s:I, s:o}", "rank", r->rank, "pid", (json_int_t)r->pid, "host", cw_json_str(r->host));

	if (!o)
		return NULL;
	if (missing) {
		json_object_set_new(o, "unresponsive", json_boolean(r->unresponsive));
		json_object_set_new(o, "dead", json_boolean(r->dead));
	} else {
		json_object_set_new(o, "collectives", json_integer((json_int_t)(r->collectives > INT64_MAX ? INT64_MAX
													: r->collectives)));
		if (r->async_error)
			json_object_set_new(o, "async_error", json_integer(r->async_error));
	}
	return o;
}

json_t *cw_ras_status_json(const struct cw_ras_status *s)
{
	json_t *o = json_object(), *comms;

	if (!o)
		return NULL;
	json_object_set_new(o, "status", json_string(cw_ras_state_name(s->state)));
	if (s->why[0])
		json_object_set_new(o, "why", cw_json_str(s->why));
	if (s->state == CW_RAS_TEXT_ONLY)
		json_object_set_new(o, "text", cw_json_str(s->text));
	if (s->state != CW_RAS_ANSWERED)
		return o;
	json_object_set_new(o, "nccl_version", cw_json_str(s->nccl_version));
	json_object_set_new(o, "communicators", json_integer(s->ncomms));
	json_object_set_new(o, "timeouts", json_integer(s->timeouts));
	comms = json_array();
	for (int i = 0; i < s->ncomms && i < CW_RAS_MAX_COMMS; i++) {
		const struct cw_ras_comm *c = &s->comms[i];
		json_t *behind = json_array(), *missing = json_array(), *ranks = json_array();
		json_t *co = json_pack("{s:o, s:i, s:i, s:i, s:I, s:I}", "hash", cw_json_str(c->hash), "size", c->size,
				       "ranks_answered", c->ranks_count, "missing_count", c->missing_count, "collectives_max",
				       (json_int_t)(c->max_collectives > INT64_MAX ? INT64_MAX : c->max_collectives),
				       "collectives_min",
				       (json_int_t)(c->min_collectives > INT64_MAX ? INT64_MAX : c->min_collectives));

		for (int k = 0; k < c->nbehind; k++)
			json_array_append_new(behind, rank_json(&c->behind[k], 0));
		for (int k = 0; k < c->nmissing_listed; k++) {
			json_array_append_new(missing, rank_json(&c->missing[k], 1));
			json_array_append_new(ranks, json_integer(c->missing[k].rank));
		}
		if (co) {
			json_object_set_new(co, "behind", behind);
			json_object_set_new(co, "missing", missing);
			json_object_set_new(co, "missing_ranks", ranks);
			json_object_set_new(co, "async_errors", json_integer(c->async_errors));
			json_array_append_new(comms, co);
		} else {
			json_decref(behind);
			json_decref(missing);
			json_decref(ranks);
		}
	}
	json_object_set_new(o, "comms", comms);
	return o;
}
