/* CPython line tables: from an instruction offset to the source line.
 *
 * Two formats, both stored in co_linetable (a bytes object):
 *  - 3.10 (PEP 626): pairs (byte delta u8, line delta i8); a line delta of
 *    -128 marks a range with no line. Offsets are in bytes.
 *  - 3.11+ location table (Objects/locations.md): entries whose first byte
 *    has bit 7 set, code = (b >> 3) & 15, length = (b & 7) + 1 code units,
 *    followed by varints that depend on the code.
 * Both decoders take the table as an untrusted byte buffer: every read is
 * bounds-checked, a truncated or malformed table yields -EINVAL, never an
 * out-of-bounds read. */
#ifndef CW_PYFRAME_LINETABLE_H
#define CW_PYFRAME_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* lasti is the instruction offset in code units (2 bytes each), the unit
 * causeway captures for every version. Returns the line (> 0), 0 when the
 * instruction has no line (a NONE entry, line -1 in CPython), -ENOENT when
 * lasti lies past the table, or -EINVAL for a malformed table. A negative
 * lasti (frame not started) returns firstlineno, as PyCode_Addr2Line does. */
int cw_linetable_310(const uint8_t *tab, size_t len, int firstlineno, int64_t lasti);
int cw_linetable_311(const uint8_t *tab, size_t len, int firstlineno, int64_t lasti);

/* Dispatch by version: minor >= 11 uses the location table. */
int cw_linetable_line(int minor, const uint8_t *tab, size_t len, int firstlineno, int64_t lasti);

#endif
