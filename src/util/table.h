/* Aligned text tables and RFC 4180 CSV, shared by the commands that print
 * rows (query, explain --per-process, check, ...).
 *
 * A table is filled cell by cell, then written once: alignment needs every
 * cell's width before the first line goes out. CSV needs no buffering, so
 * its field writer is also exported for streaming. */
#ifndef CW_UTIL_TABLE_H
#define CW_UTIL_TABLE_H

#include <stddef.h>
#include <stdio.h>

enum cw_align {
	CW_ALIGN_LEFT = 0,
	CW_ALIGN_RIGHT = 1, /* numbers */
};

struct cw_table;

/* Returns NULL on allocation failure. */
struct cw_table *cw_table_new(int ncols);
void cw_table_free(struct cw_table *t);

/* Column col's header and alignment. */
int cw_table_header(struct cw_table *t, int col, const char *name, enum cw_align align);
/* Starts a new row; its cells are empty until set. Returns 0 or -ENOMEM. */
int cw_table_row(struct cw_table *t);
/* Sets a cell of the last row (NULL is printed as empty). Returns 0,
 * -EINVAL (no row yet, col out of range) or -ENOMEM. */
int cw_table_set(struct cw_table *t, int col, const char *text);
int cw_table_setf(struct cw_table *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

size_t cw_table_nrows(const struct cw_table *t);

/* Text: headers, then rows, columns separated by two spaces, padded to
 * the widest cell in display columns (UTF-8 aware); control characters in
 * cells (C0, C1, bidi: util/term.h) are shown escaped ("\n", "\u202e") so
 * one row stays one line and a terminal acts on none. Trailing
 * spaces are not written. */
int cw_table_print(const struct cw_table *t, FILE *f);
/* RFC 4180: header line then rows, CRLF line ends, fields quoted when they
 * hold a comma, quote, CR or LF, with quotes doubled. */
int cw_table_print_csv(const struct cw_table *t, FILE *f);

/* One CSV field, quoted as needed (NULL writes an empty field). */
int cw_csv_field(FILE *f, const char *s);
/* CRLF. */
int cw_csv_end_row(FILE *f);

/* Display width of a UTF-8 string as printed (code points; an escape of
 * util/term.h counts its length). */
size_t cw_text_width(const char *s);

#endif
