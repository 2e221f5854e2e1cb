#include "cmd/opt_error.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "util/log.h"

int cw_global_check_args;

/* The table of the option loop running now: commands parse their flags
 * once, on the main thread, before any other work. */
static const struct option *cur_longopts;

int cw_getopt(int argc, char **argv, const char *optstring, const struct option *lo, int *li)
{
	int c;

	cur_longopts = lo;
	c = getopt_long(argc, argv, optstring, lo, li);
	/* --check-args: the options parsed; nothing was opened or printed
	 * yet, so there is nothing to flush or free. */
	if (c == -1 && cw_global_check_args)
		_exit(CW_EXIT_OK);
	if ((c == '?' || c == ':') && optopt == 'h' && optind > 0 && optind <= argc &&
	    !strcmp(argv[optind - 1], "-h"))
		return 'h';
	return c;
}

/* Optimal string alignment distance (edits and adjacent transpositions),
 * of two names of at most 48 bytes (longer ones are never suggested). */
static size_t distance(const char *a, const char *b)
{
	enum { MAXL = 48 };
	size_t la = strlen(a), lb = strlen(b), d[MAXL + 1][MAXL + 1];

	if (la > MAXL || lb > MAXL)
		return (size_t)-1;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *cw_suggest(const char *word, const char *const *names, size_t n)
{
	size_t len = strlen(word), best = (size_t)-1, limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
	const char *pick = NULL;

	for (size_t i = 0; i < n; i++) {
		size_t d = distance(word, names[i]);

		/* Ties go to a name the word begins ("--nod": --node, not --pod). */
		if (d < best || (d == best && pick && strncmp(pick, word, len) && !strncmp(names[i], word, len))) {
			best = d;
			pick = names[i];
		}
	}
	return best <= limit && best > 0 ? pick : NULL;
}

const char *cw_opt_hint(const char *opt, const char *const *extra, char *buf, size_t len)
{
	const char *names[128], *pick;
	char word[64];
	size_t n = 0, wl;

	buf[0] = '\0';
	if (strncmp(opt, "--", 2) || !opt[2])
		return buf;
	wl = strcspn(opt + 2, "=");
	if (wl >= sizeof(word))
		return buf;
	memcpy(word, opt + 2, wl);
	word[wl] = '\0';
	for (const struct option *o = cur_longopts; o && o->name && n < 128; o++)
		names[n++] = o->name;
	for (; extra && *extra && n < 128; extra++)
		names[n++] = *extra + (strncmp(*extra, "--", 2) ? 0 : 2);
	pick = cw_suggest(word, names, n);
	if (pick)
		snprintf(buf, len, " (did you mean \"--%s\"?)", pick);
	return buf;
}

int cw_opt_error(int json, const char *cmd, int c, char **argv)
{
	const char *opt = argv[optind - 1];
	char hint[96];

	if (c == ':')
		cw_report_error(json, "%s: option \"%s\" needs a value", cmd, opt);
	else
		cw_report_error(json, "%s: unknown option \"%s\"%s; see 'causeway %s --help'", cmd, opt,
				cw_opt_hint(opt, NULL, hint, sizeof(hint)), cmd);
	return CW_EXIT_USAGE;
}

int cw_opt_unexpected(int json, const char *cmd, const char *arg)
{
	cw_report_error(json, "%s: unexpected argument \"%s\"", cmd, arg);
	return CW_EXIT_USAGE;
}
