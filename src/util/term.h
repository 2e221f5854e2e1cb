/* Stored text shown on a terminal: a traced process names its threads,
 * files and kernels, and an NCCL RAS listener names its hosts, so any of
 * them may hold bytes a terminal acts on. Before it is written, each is
 * shown as text: C0 controls and DEL ("\n", "\t", "\r", else caret
 * notation "^["), C1 controls whether UTF-8 (U+0080-U+009F) or raw bytes,
 * bidirectional controls (U+061C, U+200E/200F, U+202A-202E, U+2066-2069:
 * "\u202e"), and bytes that are not UTF-8 ("\x9b"). */
#ifndef CW_UTIL_TERM_H
#define CW_UTIL_TERM_H

#include <stddef.h>
#include <stdio.h>

/* How the character at s (n bytes, n >= 1) is shown: returns the bytes it
 * takes, and writes into esc (16 bytes) its escape, or "" when it is shown
 * as it is. keep_nl: a newline is shown as one (a report's own lines). */
size_t cw_term_char(const unsigned char *s, size_t n, int keep_nl, char esc[16]);
/* s written escaped (NULL writes nothing); 0 or -EIO. */
int cw_term_put(FILE *f, const char *s);
/* The same, newlines kept: for a whole text of lines. */
int cw_term_put_lines(FILE *f, const char *s);
/* Display columns of s as cw_term_put writes it (a character one column,
 * an escape its length). */
size_t cw_term_width(const char *s);
/* A malloc'd escaped copy of s, or NULL on ENOMEM. */
char *cw_term_escape(const char *s);
/* JSON bound for a terminal: a stream writing to under (not closed with
 * it) that passes everything through but C1 and bidirectional controls,
 * written "\u009b" (in JSON they occur only inside strings, where that is
 * the same text; jansson already escapes C0). NULL on ENOMEM. */
FILE *cw_term_json_stream(FILE *under);

#endif
