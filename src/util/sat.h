/* Saturating int64 arithmetic. Numbers read from a database are hostile
 * input (a merged, hand-edited or corrupt file may hold INT64_MIN in a
 * time or a counter); arithmetic on them saturates instead of overflowing,
 * which is undefined behaviour in C and wraps a window inside out. */
#ifndef CW_UTIL_SAT_H
#define CW_UTIL_SAT_H

#include <stdint.h>

static inline int64_t cw_add_sat(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

static inline int64_t cw_sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

static inline int64_t cw_mul_sat(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}

static inline int64_t cw_clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

#endif
