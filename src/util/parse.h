/* Whole-string parsing of the numbers and lists users type, on the command
 * line or in the config file, and how user text is shown back in errors.
 *
 * strtol/strtoul/strtod alone accept leading blanks and signs ("-1" is a
 * huge unsigned), "0x1f", "inf", "nan", values that underflow ("1e-300"
 * is not 0 but nothing usable either) and stop at trailing junk unless the
 * caller checks. Every parser here accepts only text that is entirely one
 * plain decimal number inside [min, max]. Returns 0, or -EINVAL when the
 * text is not such a number, or -ERANGE when it is one outside the range. */
#ifndef CW_UTIL_PARSE_H
#define CW_UTIL_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The largest pid Linux can hand out (PID_MAX_LIMIT on 64-bit). */
#define CW_PID_MAX 4194304

/* Decimal digits only. */
int cw_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Digits with an optional fraction and exponent ("2", "0.5", "1e3", ".25");
 * no sign, no hex, no inf/nan. */
int cw_parse_real(const char *s, double min, double max, double *out);

/* How many bytes at the start of s form such a real number (0: none);
 * for parsers of a number followed by a unit. */
size_t cw_real_span(const char *s);

/* A number with a unit: a real number as cw_parse_real takes it, blanks
 * when spaces is set, then exactly one of the nunits suffixes of units
 * (the first that matches; "" matches a bare number). *out is the number
 * times the unit's mult. Returns 0, -EINVAL (no number, unknown unit) or
 * -ERANGE (the number overflows). */
struct cw_unit {
	const char *suffix;
	uint64_t mult;
};
int cw_parse_scaled(const char *s, const struct cw_unit *units, size_t nunits, int spaces, double *out);

/* "P[,P...]": at most cap elements, each as cw_parse_uint; an empty element
 * ("1,,2", ",1", "1,") is -EINVAL, more than cap is -E2BIG. Returns the
 * number of elements (at least 1) or -errno. */
int cw_parse_uint_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, int cap);

/* User text for an error message: at most CW_SHOWN_MAX bytes of s, each
 * byte that is not printable ASCII shown as '?', and "..." when s was
 * longer. buf must hold CW_SHOWN_BUF bytes; returns buf. */
#define CW_SHOWN_MAX 64
#define CW_SHOWN_BUF (CW_SHOWN_MAX + 4)
const char *cw_shown(const char *s, char *buf);

#endif
