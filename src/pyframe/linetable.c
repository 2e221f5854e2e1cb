#include "pyframe/linetable.h"

#include <errno.h>

/* The largest line number we accept; real sources stay far below and a
 * corrupt table that runs away is reported instead of returned. */
#define LINE_MAX_SANE 100000000

int cw_linetable_310(const uint8_t *tab, size_t len, int firstlineno, int64_t lasti)
{
	/* Mirrors CPython 3.10 Objects/codeobject.c: advance() over
	 * (sdelta, ldelta) pairs; ar_end accumulates byte deltas, the
	 * computed line accumulates line deltas except for -128. */
	int64_t addr = lasti * 2, start = 0, end = 0;
	int64_t line = firstlineno;
	int ar_line = -1;
	size_t i;

	if (lasti < 0)
		return firstlineno > 0 ? firstlineno : 0;
	if (len & 1)
		return -EINVAL;
	for (i = 0; i + 1 < len; i += 2) {
		int ldelta = (int8_t)tab[i + 1];

		start = end;
		end += tab[i];
		if (ldelta == -128) {
			ar_line = -1;
		} else {
			line += ldelta;
			ar_line = (int)line;
		}
		if (line < -LINE_MAX_SANE || line > LINE_MAX_SANE)
			return -EINVAL;
		if (start <= addr && addr < end)
			return ar_line > 0 ? ar_line : 0;
	}
	return -ENOENT;
}

/* Varint: 6 bits per byte, bit 6 means more follow (locations.md). */
static int read_varint(const uint8_t *tab, size_t len, size_t *pos, uint32_t *out)
{
	uint32_t val = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || shift > 30)
			return -EINVAL;
		b = tab[(*pos)++];
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = val;
	return 0;
}

static int read_svarint(const uint8_t *tab, size_t len, size_t *pos, int32_t *out)
{
	uint32_t u;
	int err = read_varint(tab, len, pos, &u);

	if (err)
		return err;
	*out = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return 0;
}

int cw_linetable_311(const uint8_t *tab, size_t len, int firstlineno, int64_t lasti)
{
	/* Mirrors CPython 3.11-3.13 Objects/codeobject.c advance() and
	 * get_line_delta(): the computed line starts at co_firstlineno and
	 * moves by each entry's delta; a NONE entry (code 15) has no line. */
	int64_t line = firstlineno, end = 0;
	size_t pos = 0;

	if (lasti < 0)
		return firstlineno > 0 ? firstlineno : 0;
	while (pos < len) {
		uint8_t b = tab[pos++];
		int code = (b >> 3) & 15;
		int64_t start = end;
		int32_t delta = 0;
		uint32_t skip;
		int err = 0;

		if (!(b & 0x80))
			return -EINVAL; /* not at an entry start: corrupt */
		end += (b & 7) + 1;
		switch (code) {
		case 15: /* NONE */
			break;
		case 14: /* LONG: Δline, end line, column, end column */
			err = read_svarint(tab, len, &pos, &delta);
			err = err ?: read_varint(tab, len, &pos, &skip);
			err = err ?: read_varint(tab, len, &pos, &skip);
			err = err ?: read_varint(tab, len, &pos, &skip);
			break;
		case 13: /* NO_COLUMNS */
			err = read_svarint(tab, len, &pos, &delta);
			break;
		case 10: case 11: case 12: /* ONE_LINE0..2: two column bytes */
			delta = code - 10;
			if (pos + 2 > len)
				return -EINVAL;
			pos += 2;
			break;
		default: /* SHORT0..9: one column byte */
			if (pos + 1 > len)
				return -EINVAL;
			pos += 1;
			break;
		}
		if (err)
			return err;
		line += delta;
		if (line < -LINE_MAX_SANE || line > LINE_MAX_SANE)
			return -EINVAL;
		if (start <= lasti && lasti < end)
			return code == 15 || line <= 0 ? 0 : (int)line;
	}
	return -ENOENT;
}

int cw_linetable_line(int minor, const uint8_t *tab, size_t len, int firstlineno, int64_t lasti)
{
	if (minor >= 11)
		return cw_linetable_311(tab, len, firstlineno, lasti);
	return cw_linetable_310(tab, len, firstlineno, lasti);
}
