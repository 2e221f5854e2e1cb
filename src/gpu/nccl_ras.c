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

#include "gpu/ras_stream.h"
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

/* The cancel fd (cw_ras_opts.cancel_fd) of the exchange in progress on
 * this thread: a stop wakes every wait at once. */
static _Thread_local int cancel_fd = -1;

static int wait_fd(int fd, short ev, uint64_t deadline)
{
	struct pollfd p[2] = {{.fd = fd, .events = ev}, {.fd = cancel_fd, .events = POLLIN}};
	int r;

	do {
		r = poll(p, cancel_fd > 0 ? 2 : 1, left_ms(deadline));
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (cancel_fd > 0 && p[1].revents)
		return -ECANCELED;
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

/* The JSON report, read as it arrives into the stream parser, at most
 * CW_RAS_REPLY_MAX bytes (then kept as read, truncated). Returns 0 with
 * out filled (answered or bad_reply), or a read error. */
static int read_report(int fd, struct cw_ras_stream *st, uint64_t deadline)
{
	char chunk[16384];
	size_t total = 0;

	for (;;) {
		size_t want = sizeof(chunk);
		ssize_t r;

		if (total >= CW_RAS_REPLY_MAX)
			break;
		if (want > CW_RAS_REPLY_MAX - total)
			want = CW_RAS_REPLY_MAX - total;
		r = recv(fd, chunk, want, MSG_DONTWAIT);
		if (r > 0) {
			total += (size_t)r;
			if (cw_ras_stream_feed(st, chunk, (size_t)r))
				return 0; /* bad_reply: no need to read on */
			continue;
		}
		if (r == 0) {
			(void)cw_ras_stream_end(st, 0);
			return 0;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int e = wait_fd(fd, POLLIN, deadline);
		if (e)
			return e;
	}
	(void)cw_ras_stream_end(st, 1);
	return 0;
}

int cw_ras_query(const struct cw_ras_opts *o, struct cw_ras_status *out)
{
	uint64_t now = cw_monotonic_ns();
	uint64_t deadline = now + (uint64_t)(o->timeout_ms ? o->timeout_ms : 12000) * 1000000ULL;
	uint64_t cdeadline = now + (uint64_t)(o->connect_ms ? o->connect_ms : 1000) * 1000000ULL;
	char line[LINE_MAX_BYTES], cmd[64], vwhy[sizeof(out->source_why)] = "";
	struct cw_ras_stream *st = NULL;
	enum cw_ras_source source = CW_RAS_SOURCE_UNCHECKED;
	ssize_t n;
	int fd, e, ret = 0;

	memset(out, 0, sizeof(*out));
	cancel_fd = o->cancel_fd > 0 ? o->cancel_fd : -1;
	fd = connect_to(o, cdeadline < deadline ? cdeadline : deadline, out->why, sizeof(out->why));
	if (fd == -ENOTCONN) {
		out->state = CW_RAS_NO_ANSWER;
		goto stopped;
	}
	if (fd < 0) {
		cancel_fd = -1;
		return fd;
	}
	e = command(fd, "CLIENT PROTOCOL " "2" "\n", line, sizeof(line), deadline);
	if (e) {
		no_answer(out, e == -EMSGSIZE ? CW_RAS_BAD_REPLY : CW_RAS_NO_ANSWER, "handshake", e);
		goto out;
	}
	if (strncasecmp(line, "SERVER PROTOCOL ", 16)) {
		no_answer(out, CW_RAS_BAD_REPLY, "not the NCCL RAS protocol", 0);
		goto out;
	}
	/* Who answers, asked while the connection is open. */
	if (o->verify)
		source = o->verify(o->verify_arg, fd, vwhy, sizeof(vwhy)) == 1 ? CW_RAS_SOURCE_VERIFIED
									   : CW_RAS_SOURCE_UNVERIFIED;
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
	/* NCCL < 2.28.7 has no JSON: its text report, up to the room kept. */
	if (strncasecmp(line, "OK", 2)) {
		e = send_all(fd, "STATUS\n", deadline);
		n = e ? e : read_until(fd, out->text, sizeof(out->text), 0, deadline);
		if (n == -EMSGSIZE || n >= 0) {
			out->state = CW_RAS_TEXT_ONLY;
			out->truncated = n == -EMSGSIZE;
			snprintf(out->why, sizeof(out->why), "no JSON report (NCCL before 2.28.7)");
		} else {
			no_answer(out, CW_RAS_NO_ANSWER, "status", (int)n);
		}
		goto out;
	}
	st = malloc(sizeof(*st));
	if (!st) {
		ret = -ENOMEM;
		goto out;
	}
	cw_ras_stream_init(st, out);
	e = send_all(fd, "STATUS\n", deadline);
	if (!e)
		e = read_report(fd, st, deadline);
	if (e) {
		memset(out, 0, sizeof(*out));
		no_answer(out, CW_RAS_NO_ANSWER, "status", e);
	}
out:
	free(st);
	close(fd);
stopped:
	if (out->state == CW_RAS_NO_ANSWER && strstr(out->why, strerror(ECANCELED)))
		snprintf(out->why, sizeof(out->why), "stopped before an answer");
	if (out->state == CW_RAS_ANSWERED || out->state == CW_RAS_TEXT_ONLY) {
		out->source = source;
		snprintf(out->source_why, sizeof(out->source_why), "%s", vwhy);
	}
	cancel_fd = -1;
	return ret;
}

/* --- the report ------------------------------------------------------ */

int cw_ras_parse_json(const char *buf, size_t len, struct cw_ras_status *out)
{
	struct cw_ras_stream *st = malloc(sizeof(*st));
	int ret;

	if (!st) {
		memset(out, 0, sizeof(*out));
		no_answer(out, CW_RAS_BAD_REPLY, "out of memory", 0);
		return -EBADMSG;
	}
	cw_ras_stream_init(st, out);
	if (len > CW_RAS_REPLY_MAX) {
		(void)cw_ras_stream_feed(st, buf, CW_RAS_REPLY_MAX);
		ret = cw_ras_stream_end(st, 1);
	} else {
		(void)cw_ras_stream_feed(st, buf, len);
		ret = cw_ras_stream_end(st, 0);
	}
	free(st);
	return ret;
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
	/* An answer from a listener not vouched for is never NCCL's: its
	 * status says so, whatever it claims (what it was is in "answer"). */
	if ((s->state == CW_RAS_ANSWERED || s->state == CW_RAS_TEXT_ONLY) && s->source == CW_RAS_SOURCE_UNVERIFIED) {
		json_object_set_new(o, "status", json_string("unverified"));
		json_object_set_new(o, "answer", json_string(cw_ras_state_name(s->state)));
	} else {
		json_object_set_new(o, "status", json_string(cw_ras_state_name(s->state)));
	}
	if (s->why[0])
		json_object_set_new(o, "why", cw_json_str(s->why));
	if (s->state == CW_RAS_ANSWERED || s->state == CW_RAS_TEXT_ONLY) {
		json_object_set_new(o, "truncated", json_boolean(s->truncated));
		json_object_set_new(o, "source", json_string(s->source == CW_RAS_SOURCE_VERIFIED ? "verified"
							    : s->source == CW_RAS_SOURCE_UNVERIFIED ? "unverified"
							    : "unchecked"));
		if (s->source_why[0])
			json_object_set_new(o, "source_why", cw_json_str(s->source_why));
	}
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
