/* The NCCL RAS report read as it arrives (ras_stream.h). */
#include "gpu/ras_stream.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Where the scanner stands: what the next significant byte may be. */
enum {
	S_ROOT,           /* '{' */
	S_ROOT_KEY0,      /* a key or '}' */
	S_ROOT_KEY,       /* a key */
	S_ROOT_COLON,     /* ':' */
	S_ROOT_VAL,       /* a value ("communicators": '[') */
	S_ROOT_NEXT,      /* ',' or '}' */
	S_COMMS0,         /* a communicator or ']' */
	S_COMMS,          /* a communicator */
	S_COMMS_NEXT,     /* ',' or ']' */
	S_COMM_KEY0,      /* a key or '}' */
	S_COMM_KEY,
	S_COMM_COLON,
	S_COMM_VAL,       /* a value ("ranks", "missing_ranks": '[') */
	S_COMM_NEXT,
	S_RANKS0,         /* a rank or ']' */
	S_RANKS,
	S_RANKS_NEXT,
	S_DONE,           /* whitespace only */
};

/* Members used, each met at most once in its object. */
enum { K_COMMS = 1, K_VERSION = 2, K_RAS = 4 };
enum { K_HASH = 1, K_SIZE = 2, K_RANKS_COUNT = 4, K_MISSING_COUNT = 8, K_RANKS = 16, K_MISSING = 32 };

static int bad(struct cw_ras_stream *s, const char *why)
{
	if (!s->err) {
		s->err = -EBADMSG;
		memset(s->out, 0, sizeof(*s->out));
		s->out->state = CW_RAS_BAD_REPLY;
		snprintf(s->out->why, sizeof(s->out->why), "%s", why);
	}
	return s->err;
}

void cw_ras_stream_init(struct cw_ras_stream *s, struct cw_ras_status *out)
{
	memset(s, 0, sizeof(*s));
	memset(out, 0, sizeof(*out));
	s->out = out;
	s->state = S_ROOT;
}

/* --- values, as jansson reads them ------------------------------------ */

static void copy_str(char *dst, size_t cap, const json_t *v)
{
	const char *str = json_string_value(v);

	snprintf(dst, cap, "%s", str ? str : "");
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

/* One rank of the communicator being read. */
static void rank_done(struct cw_ras_stream *s, const json_t *r)
{
	struct cw_ras_comm *c = &s->comm;
	struct cw_ras_rank rk;

	if (!json_is_object(r))
		return;
	rank_of(r, &rk);
	if (s->in_missing) {
		if (c->nmissing_listed < CW_RAS_MAX_LISTED)
			c->missing[c->nmissing_listed++] = rk;
		return;
	}
	rk.collectives = collectives_of(r);
	if (rk.async_error)
		c->async_errors++;
	if (!s->nranks || rk.collectives > c->max_collectives) {
		/* Every rank before this one is now behind it. */
		if (s->nranks) {
			memcpy(c->behind, s->first, (size_t)s->nfirst * sizeof(s->first[0]));
			c->nbehind = s->nfirst;
		}
		c->max_collectives = rk.collectives;
	} else if (rk.collectives < c->max_collectives) {
		if (c->nbehind < CW_RAS_MAX_LISTED)
			c->behind[c->nbehind++] = rk;
	}
	if (!s->nranks || rk.collectives < c->min_collectives)
		c->min_collectives = rk.collectives;
	if (s->nfirst < CW_RAS_MAX_LISTED)
		s->first[s->nfirst++] = rk;
	s->nranks++;
}

/* The communicator read whole (or cut by the cap): kept when it is among
 * those with the most trouble. */
static void comm_done(struct cw_ras_stream *s)
{
	struct cw_ras_status *out = s->out;
	struct cw_ras_comm *c = &s->comm;
	int slot = -1;

	/* The listed count never exceeds what the report declares, and a
	 * report that lists more than it counts is counted by its list. */
	if (c->missing_count < c->nmissing_listed)
		c->missing_count = c->nmissing_listed;
	out->ncomms++;
	if (out->ncomms <= CW_RAS_MAX_COMMS) {
		slot = out->ncomms - 1;
	} else {
		for (int k = 0; k < CW_RAS_MAX_COMMS; k++)
			if (trouble(&out->comms[k]) < trouble(c) &&
			    (slot < 0 || trouble(&out->comms[k]) < trouble(&out->comms[slot])))
				slot = k;
	}
	if (slot >= 0)
		out->comms[slot] = *c;
}

static void comm_begin(struct cw_ras_stream *s)
{
	memset(&s->comm, 0, sizeof(s->comm));
	s->nfirst = s->nranks = 0;
	s->seen_comm = 0;
}

/* A member name: the key being read, "" for one not used (or too long). */
static int key_done(struct cw_ras_stream *s, const json_t *k)
{
	const char *str = json_string_value(k);

	if (!str)
		return bad(s, "the report is not a JSON object");
	snprintf(s->key, sizeof(s->key), "%s", strlen(str) < sizeof(s->key) ? str : "");
	return 0;
}

static int once(struct cw_ras_stream *s, unsigned *seen, unsigned bit)
{
	if (*seen & bit)
		return bad(s, "the report repeats a member");
	*seen |= bit;
	return 0;
}

/* Which values are handed to jansson (the rest are skipped). */
static int root_keep(const char *k)
{
	return !strcmp(k, "nccl_version") || !strcmp(k, "ras");
}

static int comm_keep(const char *k)
{
	return !strcmp(k, "hash") || !strcmp(k, "size") || !strcmp(k, "ranks_count") ||
	       !strcmp(k, "missing_ranks_count");
}

static int root_val(struct cw_ras_stream *s, const json_t *v)
{
	struct cw_ras_status *out = s->out;

	if (!strcmp(s->key, "nccl_version")) {
		if (once(s, &s->seen_root, K_VERSION))
			return s->err;
		copy_str(out->nccl_version, sizeof(out->nccl_version), v);
	} else if (!strcmp(s->key, "ras")) {
		if (once(s, &s->seen_root, K_RAS))
			return s->err;
		if (json_is_object(v))
			out->timeouts = (int)int_of(json_object_get(v, "timeouts_count"), 0, 1 << 24, 0);
	}
	return 0;
}

static int comm_val(struct cw_ras_stream *s, const json_t *v)
{
	struct cw_ras_comm *c = &s->comm;
	static const struct { const char *k; unsigned bit; } keys[] = {
		{"hash", K_HASH}, {"size", K_SIZE}, {"ranks_count", K_RANKS_COUNT}, {"missing_ranks_count", K_MISSING_COUNT},
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(s->key, keys[i].k) && once(s, &s->seen_comm, keys[i].bit))
			return s->err;
	if (!strcmp(s->key, "hash"))
		copy_str(c->hash, sizeof(c->hash), v);
	else if (!strcmp(s->key, "size"))
		c->size = (int)int_of(v, 0, 1 << 24, 0);
	else if (!strcmp(s->key, "ranks_count"))
		c->ranks_count = (int)int_of(v, 0, 1 << 24, 0);
	else if (!strcmp(s->key, "missing_ranks_count"))
		c->missing_count = (int)int_of(v, 0, 1 << 24, 0);
	return 0;
}

/* --- the scanner ------------------------------------------------------- */

static int is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static void value_begin(struct cw_ras_stream *s, char ch, int keep)
{
	s->v_on = 1;
	s->v_keep = keep;
	s->v_over = s->v_instr = s->v_esc = 0;
	s->v_depth = 0;
	s->plen = 0;
	s->v_kind = ch == '{' || ch == '[' ? '{' : ch == '"' ? '"' : 's';
}

/* The state after a value read in state st. */
static int after(int st)
{
	switch (st) {
	case S_ROOT_KEY0:
	case S_ROOT_KEY:
		return S_ROOT_COLON;
	case S_ROOT_VAL:
		return S_ROOT_NEXT;
	case S_COMMS0:
	case S_COMMS:
		return S_COMMS_NEXT;
	case S_COMM_KEY0:
	case S_COMM_KEY:
		return S_COMM_COLON;
	case S_COMM_VAL:
		return S_COMM_NEXT;
	default:
		return S_RANKS_NEXT;
	}
}

/* The value just scanned, in the state that began it. */
static int value_done(struct cw_ras_stream *s)
{
	json_t *v = NULL;
	int st = s->state, ret = 0;

	s->v_on = 0;
	s->state = after(st);
	if (!s->v_keep)
		return 0;
	if (s->v_over) {
		/* A key too long is an unknown one; a value too long is skipped. */
		if (st == S_ROOT_KEY0 || st == S_ROOT_KEY || st == S_COMM_KEY0 || st == S_COMM_KEY)
			s->key[0] = '\0';
		else
			s->out->truncated = 1;
		return 0;
	}
	v = json_loadb(s->piece, s->plen, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	if (!v)
		return bad(s, "the report is not valid JSON");
	switch (st) {
	case S_ROOT_KEY0:
	case S_ROOT_KEY:
	case S_COMM_KEY0:
	case S_COMM_KEY:
		ret = key_done(s, v);
		break;
	case S_ROOT_VAL:
		ret = root_val(s, v);
		break;
	case S_COMM_VAL:
		ret = comm_val(s, v);
		break;
	case S_RANKS0:
	case S_RANKS:
		rank_done(s, v);
		break;
	default:
		break;
	}
	json_decref(v);
	return ret;
}

/* One byte of the value being scanned; returns 1 when it ended before this
 * byte (a bare scalar: the byte belongs to what follows), else 0. */
static int value_byte(struct cw_ras_stream *s, char ch)
{
	if (s->v_kind == 's' && (is_ws(ch) || ch == ',' || ch == '}' || ch == ']' || ch == ':'))
		return 1;
	if (s->v_keep && !s->v_over) {
		if (s->plen < sizeof(s->piece))
			s->piece[s->plen++] = ch;
		else
			s->v_over = 1;
	}
	if (s->v_kind == 's')
		return 0;
	if (s->v_instr) {
		if (s->v_esc)
			s->v_esc = 0;
		else if (ch == '\\')
			s->v_esc = 1;
		else if (ch == '"') {
			s->v_instr = 0;
			if (s->v_kind == '"')
				s->v_on = 2; /* ended with this byte */
		}
		return 0;
	}
	if (ch == '"') {
		s->v_instr = 1;
		return 0;
	}
	if (ch == '{' || ch == '[')
		s->v_depth++;
	else if ((ch == '}' || ch == ']') && --s->v_depth == 0)
		s->v_on = 2;
	return 0;
}

/* One significant byte (not inside a value) in the current state. */
static int skeleton_byte(struct cw_ras_stream *s, char ch)
{
	int st = s->state;

	if (is_ws(ch))
		return 0;
	switch (st) {
	case S_ROOT:
		if (ch != '{')
			return bad(s, "the report is not a JSON object");
		s->state = S_ROOT_KEY0;
		return 0;
	case S_ROOT_KEY0:
	case S_COMM_KEY0:
		if (ch == '}') {
			if (st == S_COMM_KEY0)
				comm_done(s);
			s->state = st == S_ROOT_KEY0 ? S_DONE : S_COMMS_NEXT;
			return 0;
		}
		/* fall through */
	case S_ROOT_KEY:
	case S_COMM_KEY:
		if (ch != '"')
			return bad(s, "the report is not valid JSON");
		value_begin(s, ch, 1);
		s->v_instr = 1;
		s->piece[s->plen++] = ch;
		return 0;
	case S_ROOT_COLON:
	case S_COMM_COLON:
		if (ch != ':')
			return bad(s, "the report is not valid JSON");
		s->state = st == S_ROOT_COLON ? S_ROOT_VAL : S_COMM_VAL;
		return 0;
	case S_ROOT_VAL:
		if (!strcmp(s->key, "communicators") && ch == '[') {
			if (once(s, &s->seen_root, K_COMMS))
				return s->err;
			s->state = S_COMMS0;
			return 0;
		}
		break;
	case S_COMM_VAL:
		if ((!strcmp(s->key, "ranks") || !strcmp(s->key, "missing_ranks")) && ch == '[') {
			s->in_missing = !strcmp(s->key, "missing_ranks");
			if (once(s, &s->seen_comm, s->in_missing ? K_MISSING : K_RANKS))
				return s->err;
			s->state = S_RANKS0;
			return 0;
		}
		break;
	case S_ROOT_NEXT:
	case S_COMM_NEXT:
		if (ch == ',') {
			s->state = st == S_ROOT_NEXT ? S_ROOT_KEY : S_COMM_KEY;
			return 0;
		}
		if (ch != '}')
			return bad(s, "the report is not valid JSON");
		if (st == S_COMM_NEXT)
			comm_done(s);
		s->state = st == S_ROOT_NEXT ? S_DONE : S_COMMS_NEXT;
		return 0;
	case S_COMMS0:
	case S_RANKS0:
		if (ch == ']') {
			s->state = st == S_COMMS0 ? S_ROOT_NEXT : S_COMM_NEXT;
			return 0;
		}
		if (st == S_COMMS0 && ch == '{') {
			comm_begin(s);
			s->state = S_COMM_KEY0;
			return 0;
		}
		break;
	case S_COMMS:
		if (ch == '{') {
			comm_begin(s);
			s->state = S_COMM_KEY0;
			return 0;
		}
		break;
	case S_COMMS_NEXT:
	case S_RANKS_NEXT:
		if (ch == ',') {
			s->state = st == S_COMMS_NEXT ? S_COMMS : S_RANKS;
			return 0;
		}
		if (ch != ']')
			return bad(s, "the report is not valid JSON");
		s->state = st == S_COMMS_NEXT ? S_ROOT_NEXT : S_COMM_NEXT;
		return 0;
	case S_RANKS:
		break;
	default:
		return bad(s, "the report has more after its end");
	}
	/* A value: kept when it is one the report is read for. */
	if (ch == ',' || ch == ':' || ch == '}' || ch == ']')
		return bad(s, "the report is not valid JSON");
	value_begin(s, ch, st == S_ROOT_VAL ? root_keep(s->key) : st == S_COMM_VAL ? comm_keep(s->key)
			   : st == S_RANKS0 || st == S_RANKS);
	value_byte(s, ch);
	if (s->v_on == 2)
		return value_done(s);
	return 0;
}

int cw_ras_stream_feed(struct cw_ras_stream *s, const char *buf, size_t len)
{
	for (size_t i = 0; i < len && !s->err; i++) {
		if (s->v_on) {
			if (value_byte(s, buf[i])) {
				/* A bare scalar ended before this byte. */
				if (value_done(s) || skeleton_byte(s, buf[i]))
					break;
			} else if (s->v_on == 2 && value_done(s)) {
				break;
			}
			continue;
		}
		if (skeleton_byte(s, buf[i]))
			break;
	}
	return s->err;
}

int cw_ras_stream_end(struct cw_ras_stream *s, int truncated)
{
	if (s->err)
		return s->err;
	if (s->v_on && s->v_kind == 's' && !truncated && value_done(s))
		return s->err;
	if (!truncated && s->state != S_DONE)
		return bad(s, s->state == S_ROOT ? "the report is empty" : "the report ends early");
	if (s->state == S_ROOT)
		return bad(s, "the report is empty");
	if (truncated) {
		s->out->truncated = truncated;
		/* The communicator being read when the cap came: what was read. */
		if (s->state >= S_COMM_KEY0 && s->state <= S_RANKS_NEXT)
			comm_done(s);
	}
	s->out->state = CW_RAS_ANSWERED;
	return 0;
}
