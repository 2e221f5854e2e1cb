#define _GNU_SOURCE /* vasprintf */
#include "util/table.h"
#include "util/term.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/vec.h"

struct cw_table {
	int ncols;
	char **headers;
	enum cw_align *align;
	char **cells; /* nrows * ncols */
	size_t nrows, alloc_rows;
};

struct cw_table *cw_table_new(int ncols)
{
	struct cw_table *t;

	if (ncols <= 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ncols = ncols;
	t->headers = calloc((size_t)ncols, sizeof(*t->headers));
	t->align = calloc((size_t)ncols, sizeof(*t->align));
	if (!t->headers || !t->align) {
		cw_table_free(t);
		return NULL;
	}
	return t;
}

void cw_table_free(struct cw_table *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < (size_t)t->ncols && t->headers; i++)
		free(t->headers[i]);
	for (i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->headers);
	free(t->align);
	free(t->cells);
	free(t);
}

int cw_table_header(struct cw_table *t, int col, const char *name, enum cw_align align)
{
	char *s;

	if (col < 0 || col >= t->ncols)
		return -EINVAL;
	s = cw_utf8_fix(name ? name : "", name ? strlen(name) : 0, NULL);
	if (!s)
		return -ENOMEM;
	free(t->headers[col]);
	t->headers[col] = s;
	t->align[col] = align;
	return 0;
}

int cw_table_row(struct cw_table *t)
{
	size_t n = (size_t)t->ncols;

	if (cw_vec_reserve(&t->cells, &t->alloc_rows, t->nrows + 1, n * sizeof(*t->cells), 64) < 0)
		return -ENOMEM;
	memset(&t->cells[t->nrows * n], 0, n * sizeof(*t->cells));
	t->nrows++;
	return 0;
}

int cw_table_set(struct cw_table *t, int col, const char *text)
{
	char **cell, *s = NULL;

	if (!t->nrows || col < 0 || col >= t->ncols)
		return -EINVAL;
	/* Invalid UTF-8 is shown as U+FFFD, as in every JSON answer. */
	if (text && !(s = cw_utf8_fix(text, strlen(text), NULL)))
		return -ENOMEM;
	cell = &t->cells[(t->nrows - 1) * (size_t)t->ncols + (size_t)col];
	free(*cell);
	*cell = s;
	return 0;
}

int cw_table_setf(struct cw_table *t, int col, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	rc = cw_table_set(t, col, s);
	free(s);
	return rc;
}

size_t cw_table_nrows(const struct cw_table *t)
{
	return t->nrows;
}

size_t cw_text_width(const char *s)
{
	return cw_term_width(s);
}

/* Cells are stored text: escaped as util/term.h says (C0, C1, bidi,
 * bytes not UTF-8), one row one line, widths to match. */
static int put_escaped(FILE *f, const char *s)
{
	return cw_term_put(f, s);
}

static void print_line(const struct cw_table *t, FILE *f, char *const *cells, const size_t *width)
{
	size_t pending = 0; /* spaces owed; written only before more text */
	int c;

	for (c = 0; c < t->ncols; c++) {
		size_t w = cw_text_width(cells[c]);
		size_t gap = width[c] > w ? width[c] - w : 0;

		if (c)
			pending += 2;
		if (t->align[c] == CW_ALIGN_RIGHT)
			pending += gap;
		if (w) {
			for (; pending; pending--)
				fputc(' ', f);
			put_escaped(f, cells[c]);
		}
		if (t->align[c] == CW_ALIGN_LEFT)
			pending += gap;
	}
	fputc('\n', f);
}

int cw_table_print(const struct cw_table *t, FILE *f)
{
	size_t *width, r;
	int c;

	width = calloc((size_t)t->ncols, sizeof(*width));
	if (!width)
		return -ENOMEM;
	for (c = 0; c < t->ncols; c++)
		width[c] = cw_text_width(t->headers[c]);
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			size_t w = cw_text_width(t->cells[r * (size_t)t->ncols + (size_t)c]);

			if (w > width[c])
				width[c] = w;
		}
	print_line(t, f, t->headers, width);
	for (r = 0; r < t->nrows; r++)
		print_line(t, f, &t->cells[r * (size_t)t->ncols], width);
	free(width);
	return ferror(f) ? -EIO : 0;
}

int cw_csv_field(FILE *f, const char *s)
{
	char *fixed;
	int rc;

	if (!s)
		return 0;
	if (!cw_utf8_valid(s, strlen(s))) {
		if (!(fixed = cw_utf8_fix(s, strlen(s), NULL)))
			return -ENOMEM;
		rc = cw_csv_field(f, fixed);
		free(fixed);
		return rc;
	}
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
	} else {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	}
	return ferror(f) ? -EIO : 0;
}

int cw_csv_end_row(FILE *f)
{
	fputs("\r\n", f);
	return ferror(f) ? -EIO : 0;
}

static void csv_line(const struct cw_table *t, FILE *f, char *const *cells)
{
	int c;

	for (c = 0; c < t->ncols; c++) {
		if (c)
			fputc(',', f);
		cw_csv_field(f, cells[c]);
	}
	cw_csv_end_row(f);
}

int cw_table_print_csv(const struct cw_table *t, FILE *f)
{
	size_t r;

	csv_line(t, f, t->headers);
	for (r = 0; r < t->nrows; r++)
		csv_line(t, f, &t->cells[r * (size_t)t->ncols]);
	return ferror(f) ? -EIO : 0;
}
