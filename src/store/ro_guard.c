/* Per-call bounds on SQLite's costly built-in functions and the
 * connection's limits (ro_guard.h); the watchdog is ro_watchdog.c, the
 * heap bound ro_heap.c. */
#include "store/ro_guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Functions computed by the built-in on the private connection, once
 * bounded: those rarely called over whole tables. */
enum delegate { D_REPLACE, D_TRIM, D_LTRIM, D_RTRIM, D_COUNT };

static const char *const delegate_name[D_COUNT] = { "replace", "trim", "ltrim", "rtrim" };

struct cw_ro_guard {
	sqlite3 *user;
	sqlite3 *priv; /* opened on the first delegated call */
	sqlite3_stmt *st[D_COUNT][CW_RO_LIMIT_FUNCTION_ARG + 1];
	int blobs_never_like; /* SQLITE_LIKE_DOESNT_MATCH_BLOBS */
};

struct fn_ctx {
	struct cw_ro_guard *g;
	enum delegate d;
	const char *name;
};

static const struct {
	int id, value;
} limits[] = {
	{ SQLITE_LIMIT_LENGTH, CW_RO_LIMIT_LENGTH },
	{ SQLITE_LIMIT_SQL_LENGTH, CW_RO_LIMIT_SQL_LENGTH },
	{ SQLITE_LIMIT_COLUMN, CW_RO_LIMIT_COLUMN },
	{ SQLITE_LIMIT_EXPR_DEPTH, CW_RO_LIMIT_EXPR_DEPTH },
	{ SQLITE_LIMIT_COMPOUND_SELECT, CW_RO_LIMIT_COMPOUND_SELECT },
	{ SQLITE_LIMIT_VDBE_OP, CW_RO_LIMIT_VDBE_OP },
	{ SQLITE_LIMIT_FUNCTION_ARG, CW_RO_LIMIT_FUNCTION_ARG },
	{ SQLITE_LIMIT_ATTACHED, 0 },
	{ SQLITE_LIMIT_LIKE_PATTERN_LENGTH, CW_RO_LIMIT_LIKE_PATTERN },
	{ SQLITE_LIMIT_VARIABLE_NUMBER, CW_RO_LIMIT_VARIABLE_NUMBER },
	{ SQLITE_LIMIT_TRIGGER_DEPTH, CW_RO_LIMIT_TRIGGER_DEPTH },
	{ SQLITE_LIMIT_WORKER_THREADS, 0 },
};

static void set_limits(sqlite3 *db)
{
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		sqlite3_limit(db, limits[i].id, limits[i].value);
}

static int open_private(struct cw_ro_guard *g)
{
	if (g->priv)
		return 0;
	if (sqlite3_open_v2(":memory:", &g->priv, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		sqlite3_close_v2(g->priv);
		g->priv = NULL;
		return -ENOMEM;
	}
	set_limits(g->priv);
	sqlite3_db_config(g->priv, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
	return 0;
}

/* "SELECT name(?1, ..., ?n)", prepared once per name and arity. */
static sqlite3_stmt *delegate_stmt(struct cw_ro_guard *g, enum delegate d, int argc)
{
	char sql[64 + 6 * CW_RO_LIMIT_FUNCTION_ARG];
	size_t o;
	int i;

	if (argc < 1 || argc > CW_RO_LIMIT_FUNCTION_ARG)
		return NULL;
	if (g->st[d][argc])
		return g->st[d][argc];
	if (open_private(g))
		return NULL;
	o = (size_t)snprintf(sql, sizeof(sql), "SELECT %s(", delegate_name[d]);
	for (i = 1; i <= argc; i++)
		o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s?%d", i > 1 ? "," : "", i);
	snprintf(sql + o, sizeof(sql) - o, ")");
	if (sqlite3_prepare_v3(g->priv, sql, -1, SQLITE_PREPARE_PERSISTENT, &g->st[d][argc], NULL) != SQLITE_OK)
		return NULL;
	return g->st[d][argc];
}

/* Runs the built-in with the same arguments; its result or error is the
 * call's. */
static void delegate(sqlite3_context *ctx, enum delegate d, int argc, sqlite3_value **argv)
{
	struct fn_ctx *f = sqlite3_user_data(ctx);
	sqlite3_stmt *st = delegate_stmt(f->g, d, argc);
	int i, rc;

	if (!st) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	for (i = 0; i < argc; i++)
		sqlite3_bind_value(st, i + 1, argv[i]);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
	else if ((rc = sqlite3_reset(st)) == SQLITE_TOOBIG)
		sqlite3_result_error_toobig(ctx);
	else if (rc == SQLITE_NOMEM)
		sqlite3_result_error_nomem(ctx);
	else
		sqlite3_result_error(ctx, sqlite3_errmsg(f->g->priv), -1);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

static void too_costly(sqlite3_context *ctx, const char *name, int64_t a, int64_t b, int64_t max)
{
	char msg[200];

	snprintf(msg, sizeof(msg),
		 "%s() over %lld and %lld bytes is too costly for one call (their product may be at most %lld)",
		 name, (long long)a, (long long)b, (long long)max);
	sqlite3_result_error(ctx, msg, -1);
}

/* ---- printf / format ---- */

#define ABSENT INT64_MIN

static sqlite3_int64 int_arg(int argc, sqlite3_value **argv, int *next)
{
	return *next < argc ? sqlite3_value_int64(argv[(*next)++]) : ((*next)++, 0);
}

static const char *text_arg(int argc, sqlite3_value **argv, int *next)
{
	return *next < argc ? (const char *)sqlite3_value_text(argv[(*next)++]) : ((*next)++, NULL);
}

static unsigned utf8_first(const unsigned char *s, int *chars);

static int is_flag(int c)
{
	return c == '-' || c == '+' || c == ' ' || c == '#' || c == '!' || c == '0' || c == ',';
}

/* The conversions of SQL printf; %T and %S are SQLite's internal ones. */
static int is_conversion(int c)
{
	switch (c) {
	case 'd': case 's': case 'g': case 'z': case 'q': case 'Q': case 'w': case 'c': case 'o': case 'u':
	case 'x': case 'X': case 'f': case 'e': case 'E': case 'G': case 'i': case 'n': case 'p': case '%':
	case 'r':
		return 1;
	default:
		return 0;
	}
}

/* Writes v (0 <= v <= CW_RO_MAX_PRINTF_WIDTH) at spec + o; returns the
 * new end. */
static size_t put_digits(char *spec, size_t o, int64_t v)
{
	char d[24];
	int n = 0;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		spec[o++] = d[--n];
	return o;
}

/* Digits or '*' (an argument) for a width or precision; ABSENT when
 * neither. Returns 0, or -1 past CW_RO_MAX_PRINTF_WIDTH. */
static int printf_number(const unsigned char **pp, int argc, sqlite3_value **argv, int *next, int64_t *out)
{
	const unsigned char *p = *pp;
	int64_t v = ABSENT;

	if (*p == '*') {
		v = int_arg(argc, argv, next);
		p++;
	} else if (*p >= '0' && *p <= '9') {
		for (v = 0; *p >= '0' && *p <= '9'; p++)
			if ((v = v * 10 + (*p - '0')) > CW_RO_MAX_PRINTF_WIDTH)
				return -1;
	}
	*pp = p;
	*out = v;
	return v != ABSENT && (v > CW_RO_MAX_PRINTF_WIDTH || v < -CW_RO_MAX_PRINTF_WIDTH) ? -1 : 0;
}

/* SQL printf() and format(), SQLite's own formatting with every width and
 * precision at most CW_RO_MAX_PRINTF_WIDTH: each conversion goes to
 * sqlite3_str_appendf() with its width and precision as digits and its
 * argument typed as the C form reads it, taken from the SQL arguments as
 * SQLite's printf.c takes them (3.40-3.46: an integer with
 * sqlite3_value_int64, a real with sqlite3_value_double, text with
 * sqlite3_value_text, missing ones as 0 or NULL; a negative '*' width
 * justifies left, a negative precision counts as its absolute value;
 * %n prints nothing and takes no argument; %T, %S or an unknown
 * conversion ends the output, as does a conversion cut by the end of the
 * format; a lone '%' at the end prints itself). The unit test compares
 * the answers with the built-in's. */
static void printf_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct fn_ctx *f = sqlite3_user_data(ctx);
	const unsigned char *p = argc ? sqlite3_value_text(argv[0]) : NULL;
	sqlite3_str *out;
	int next = 1, n, err;
	char msg[128], *z;

	if (!p)
		return;
	out = sqlite3_str_new(sqlite3_context_db_handle(ctx));
	while (*p) {
		const unsigned char *lit = p;
		char spec[64], flags[8];
		size_t nflags = 0;
		int64_t width, prec;
		size_t o;
		int c, chars;

		while (*p && *p != '%')
			p++;
		sqlite3_str_append(out, (const char *)lit, (int)(p - lit));
		if (!*p++)
			break;
		if (!*p) {
			sqlite3_str_append(out, "%", 1);
			break;
		}
		for (; is_flag(*p); p++)
			if (!memchr(flags, *p, nflags))
				flags[nflags++] = (char)*p;
		if (printf_number(&p, argc, argv, &next, &width))
			goto too_wide;
		prec = ABSENT;
		if (*p == '.') {
			p++;
			if (printf_number(&p, argc, argv, &next, &prec))
				goto too_wide;
			prec = prec == ABSENT ? 0 : prec < 0 ? -prec : prec;
		}
		while (*p == 'l')
			p++;
		c = *p;
		if (!is_conversion(c))
			break;
		p++;
		if (width != ABSENT && width < 0 && !memchr(flags, '-', nflags))
			flags[nflags++] = '-';
		/* The spec as digits, built by hand: snprintf() here would
		 * cost more than the conversion. */
		spec[0] = '%';
		memcpy(spec + 1, flags, nflags);
		o = 1 + nflags;
		if (width != ABSENT)
			o = put_digits(spec, o, width < 0 ? -width : width);
		if (prec != ABSENT) {
			spec[o++] = '.';
			o = put_digits(spec, o, prec);
		}
		/* Integers as 64-bit in C; %z frees its argument in C, in SQL
		 * it is %s. */
		if (c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o' || c == 'r') {
			spec[o++] = 'l';
			spec[o++] = 'l';
		}
		spec[o++] = (char)(c == 'z' ? 's' : c);
		spec[o] = '\0';
		switch (c) {
		case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'r': case 'p':
			sqlite3_str_appendf(out, spec, int_arg(argc, argv, &next));
			break;
		case 'f': case 'e': case 'E': case 'g': case 'G':
			sqlite3_str_appendf(out, spec, next < argc ? sqlite3_value_double(argv[next]) : 0.0);
			next++;
			break;
		case 'c': {
			const char *t = text_arg(argc, argv, &next);

			sqlite3_str_appendf(out, spec, t ? utf8_first((const unsigned char *)t, &chars) : 0u);
			break;
		}
		case 's': case 'z': case 'q': case 'Q': case 'w':
			sqlite3_str_appendf(out, spec, text_arg(argc, argv, &next));
			break;
		case '%':
			sqlite3_str_appendf(out, spec);
			break;
		default: /* 'n' */
			break;
		}
	}
	n = sqlite3_str_length(out);
	err = sqlite3_str_errcode(out);
	z = sqlite3_str_finish(out);
	if (err == SQLITE_NOMEM)
		sqlite3_result_error_nomem(ctx);
	else if (z) /* SQLite's printf() is NULL when empty or too long */
		sqlite3_result_text(ctx, z, n, sqlite3_free);
	return;
too_wide:
	sqlite3_free(sqlite3_str_finish(out));
	snprintf(msg, sizeof(msg), "%s(): a width or precision is larger than %d", f->name, CW_RO_MAX_PRINTF_WIDTH);
	sqlite3_result_error(ctx, msg, -1);
}

/* ---- LIKE and GLOB ---- */

/* 1 when pattern has a wildcard that can match many characters anywhere
 * but at its very end: only then does matching try each position of the
 * text against the rest of the pattern. */
static int inner_wildcard(const unsigned char *p, int n, int glob)
{
	int i;

	for (i = 0; i + 1 < n; i++)
		if (p[i] == (glob ? '*' : '%'))
			return 1;
	return 0;
}

/* The first character of s as a code point; *chars is how many
 * characters s holds (at most 2 counted). */
static unsigned utf8_first(const unsigned char *s, int *chars)
{
	unsigned c = *s;
	int n = 0, len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1, i;

	if (len > 1)
		c &= 0x3f >> (len - 1);
	for (i = 1; i < len && (s[i] & 0xc0) == 0x80; i++)
		c = (c << 6) | (s[i] & 0x3f);
	for (; *s && n < 2; s++)
		if ((*s & 0xc0) != 0x80)
			n++;
	*chars = n;
	return c;
}

static void match_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv, int glob)
{
	struct fn_ctx *f = sqlite3_user_data(ctx);
	const unsigned char *pat, *str;
	unsigned esc = 0;
	int npat, nstr, chars;

	/* As SQLite's likeFunc (func.c): blobs, the pattern limit, the
	 * ESCAPE character, NULLs, in that order. */
	if (f->g->blobs_never_like &&
	    (sqlite3_value_type(argv[0]) == SQLITE_BLOB || sqlite3_value_type(argv[1]) == SQLITE_BLOB)) {
		sqlite3_result_int(ctx, 0);
		return;
	}
	npat = sqlite3_value_bytes(argv[0]);
	if (npat > sqlite3_limit(f->g->user, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, -1)) {
		sqlite3_result_error(ctx, "LIKE or GLOB pattern too complex", -1);
		return;
	}
	if (argc == 3) {
		const unsigned char *e = sqlite3_value_text(argv[2]);

		if (!e)
			return;
		esc = utf8_first(e, &chars);
		if (chars != 1) {
			sqlite3_result_error(ctx, "ESCAPE expression must be a single character", -1);
			return;
		}
	}
	pat = sqlite3_value_text(argv[0]);
	str = sqlite3_value_text(argv[1]);
	if (!pat || !str)
		return;
	npat = sqlite3_value_bytes(argv[0]);
	nstr = sqlite3_value_bytes(argv[1]);
	if (inner_wildcard(pat, npat, glob) && (int64_t)npat * nstr > CW_RO_MAX_SCAN_PAIRS) {
		too_costly(ctx, glob ? "glob" : "like", nstr, npat, CW_RO_MAX_SCAN_PAIRS);
		return;
	}
	if (glob)
		sqlite3_result_int(ctx, sqlite3_strglob((const char *)pat, (const char *)str) == 0);
	else
		sqlite3_result_int(ctx, sqlite3_strlike((const char *)pat, (const char *)str, esc) == 0);
}

static void like_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	match_fn(ctx, argc, argv, 0);
}

static void glob_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	match_fn(ctx, argc, argv, 1);
}

/* ---- instr, replace, trim(X, Y) ---- */

static void pair_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct fn_ctx *f = sqlite3_user_data(ctx);
	int64_t a = sqlite3_value_bytes(argv[0]), b = sqlite3_value_bytes(argv[1]);
	int64_t max = f->d == D_REPLACE ? CW_RO_MAX_MEMCMP_PAIRS : CW_RO_MAX_SCAN_PAIRS;

	if (a * b > max) {
		too_costly(ctx, f->name, a, b, max);
		return;
	}
	delegate(ctx, f->d, argc, argv);
}

/* instr() once bounded, run here rather than on the private connection:
 * it is common over whole tables (WHERE instr(detail, ?) > 0), and its
 * algorithm is SQLite's instrFunc (func.c, 3.40-3.46) as is: bytes of two
 * blobs, else characters of the two as text. */
static void instr_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int th = sqlite3_value_type(argv[0]), tn = sqlite3_value_type(argv[1]), n = 1, text = 1;
	sqlite3_value *c1 = NULL, *c2 = NULL;
	const unsigned char *h, *nd;
	int64_t nh, nn;

	(void)argc;
	if (th == SQLITE_NULL || tn == SQLITE_NULL)
		return;
	nh = sqlite3_value_bytes(argv[0]);
	nn = sqlite3_value_bytes(argv[1]);
	if (nh * nn > CW_RO_MAX_MEMCMP_PAIRS) {
		too_costly(ctx, "instr", nh, nn, CW_RO_MAX_MEMCMP_PAIRS);
		return;
	}
	if (nn > 0) {
		if (th == SQLITE_BLOB && tn == SQLITE_BLOB) {
			h = sqlite3_value_blob(argv[0]);
			nd = sqlite3_value_blob(argv[1]);
			text = 0;
		} else if (th != SQLITE_BLOB && tn != SQLITE_BLOB) {
			h = sqlite3_value_text(argv[0]);
			nd = sqlite3_value_text(argv[1]);
		} else {
			c1 = sqlite3_value_dup(argv[0]);
			c2 = sqlite3_value_dup(argv[1]);
			h = sqlite3_value_text(c1);
			nd = sqlite3_value_text(c2);
			nh = sqlite3_value_bytes(c1);
			nn = sqlite3_value_bytes(c2);
		}
		if (!nd || (nh && !h)) {
			sqlite3_result_error_nomem(ctx);
			goto out;
		}
		while (nn <= nh && (h[0] != nd[0] || memcmp(h, nd, (size_t)nn))) {
			n++;
			do {
				nh--;
				h++;
			} while (text && (h[0] & 0xc0) == 0x80);
		}
		if (nn > nh)
			n = 0;
	}
	sqlite3_result_int(ctx, n);
out:
	sqlite3_value_free(c1);
	sqlite3_value_free(c2);
}

/* ---- the connection ---- */

static const struct {
	const char *name;
	int nargs;
	void (*fn)(sqlite3_context *, int, sqlite3_value **);
	enum delegate d;
} wrapped[] = {
	{ "printf", -1, printf_fn, D_COUNT },
	{ "format", -1, printf_fn, D_COUNT },
	{ "like", 2, like_fn, D_COUNT },
	{ "like", 3, like_fn, D_COUNT },
	{ "glob", 2, glob_fn, D_COUNT },
	{ "instr", 2, instr_fn, D_COUNT },
	{ "replace", 3, pair_fn, D_REPLACE },
	{ "trim", 2, pair_fn, D_TRIM },
	{ "ltrim", 2, pair_fn, D_LTRIM },
	{ "rtrim", 2, pair_fn, D_RTRIM },
};

#define NWRAPPED (sizeof(wrapped) / sizeof(wrapped[0]))

struct guard_alloc {
	struct cw_ro_guard g;
	struct fn_ctx f[NWRAPPED];
};

int cw_ro_guard_attach(sqlite3 *db, struct cw_ro_guard **out)
{
	/* format() is printf()'s name since SQLite 3.38; before, there is
	 * nothing to replace. */
	int has_format = sqlite3_libversion_number() >= 3038000;
	struct guard_alloc *a;
	size_t i;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->g.user = db;
	a->g.blobs_never_like = sqlite3_compileoption_used("LIKE_DOESNT_MATCH_BLOBS");
	set_limits(db);
	/* fts3_tokenizer('x') returns a tokenizer's address in libsqlite3 and
	 * its two-argument form installs a pointer given as a blob. The
	 * authorizer refuses the name as well (ro_query.c). */
#ifdef SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, NULL);
#endif
	for (i = 0; i < NWRAPPED; i++) {
		a->f[i].g = &a->g;
		a->f[i].d = wrapped[i].d;
		a->f[i].name = wrapped[i].name;
		if (!has_format && !strcmp(wrapped[i].name, "format"))
			continue;
		/* Innocuous like the built-ins, so views that call them keep
		 * working with trusted_schema off. */
		if (sqlite3_create_function_v2(db, wrapped[i].name, wrapped[i].nargs,
					       SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, &a->f[i],
					       wrapped[i].fn, NULL, NULL, NULL) != SQLITE_OK) {
			free(a);
			return -ENOMEM;
		}
	}
	*out = &a->g;
	return 0;
}

void cw_ro_guard_free(struct cw_ro_guard *g)
{
	int d, n;

	if (!g)
		return;
	for (d = 0; d < D_COUNT; d++)
		for (n = 0; n <= CW_RO_LIMIT_FUNCTION_ARG; n++)
			sqlite3_finalize(g->st[d][n]);
	sqlite3_close_v2(g->priv);
	free(g); /* the first member of its guard_alloc */
}
