/* Bounds on what one user SQL statement may cost (ro_query.c's connections).
 *
 * SQLite's progress handler runs between virtual-machine opcodes, so a
 * single opcode that loops inside a built-in function is out of its reach:
 * printf('%.*c', 2147483647, 'x') looped 2^31 times (16 s on SQLite 3.40),
 * and LIKE, GLOB, instr(), replace() and the two-argument trims cost the
 * product of their two operands' lengths (40 minutes for a 16 MiB text and
 * a 50,000-byte pattern). Here:
 *  - SQLite's limits are set for the connection (CW_RO_LIMIT_* below);
 *  - those functions are replaced on the connection by wrappers that refuse
 *    a call whose cost passes a bound, then compute the result with
 *    SQLite's own code, so results are SQLite's: sqlite3_strlike and
 *    sqlite3_strglob, sqlite3_str_appendf one conversion at a time,
 *    instr's algorithm as func.c has it, and for replace() and the trims
 *    the built-in run on a private in-memory connection;
 *  - fts3_tokenizer(), which hands out and accepts raw pointers, is off;
 *  - a watchdog thread interrupts a statement at its deadline, which stops
 *    the loops that check for interrupts but not for the progress handler
 *    (count(*) over a whole table, sorting);
 *  - SQLite allocations made while a statement runs are bounded per thread
 *    (ro_heap.c): the statement fails with "exceeded the memory limit". */
#ifndef CW_STORE_RO_GUARD_H
#define CW_STORE_RO_GUARD_H

#include <sqlite3.h>
#include <stdint.h>

/* SQLite limits on a user connection (sqlite3_limit). */
#define CW_RO_LIMIT_LENGTH (16 << 20)          /* one value, bytes */
#define CW_RO_LIMIT_SQL_LENGTH (1 << 20)       /* statement text, bytes */
#define CW_RO_LIMIT_COLUMN 1000                /* result or index columns */
#define CW_RO_LIMIT_EXPR_DEPTH 200             /* expression tree depth */
#define CW_RO_LIMIT_COMPOUND_SELECT 100        /* terms of a UNION chain */
#define CW_RO_LIMIT_VDBE_OP 1000000            /* program size */
#define CW_RO_LIMIT_FUNCTION_ARG 32            /* arguments of one call */
#define CW_RO_LIMIT_LIKE_PATTERN 1000          /* LIKE/GLOB pattern, bytes */
#define CW_RO_LIMIT_VARIABLE_NUMBER 1000       /* largest ?NNN */
#define CW_RO_LIMIT_TRIGGER_DEPTH 1            /* nothing can fire anyway */
/* printf()/format() width and precision, literal or from an argument. */
#define CW_RO_MAX_PRINTF_WIDTH 100000
/* Per call: the product of the two operands' byte lengths allowed for a
 * character-by-character scan (LIKE/GLOB with an inner wildcard, the
 * two-argument trims) and for a memcmp scan (instr, replace): about
 * 0.2 s each on one core. */
#define CW_RO_MAX_SCAN_PAIRS ((int64_t)1 << 27)
#define CW_RO_MAX_MEMCMP_PAIRS ((int64_t)1 << 33)
/* SQLite heap one statement may add (ro_heap.c). */
#define CW_RO_MAX_HEAP_BYTES ((int64_t)256 << 20)

struct cw_ro_guard;

/* Sets the limits and replaces the functions on db. Returns 0 or -errno. */
int cw_ro_guard_attach(sqlite3 *db, struct cw_ro_guard **out);
/* Frees the guard (after db's statements are finalized). */
void cw_ro_guard_free(struct cw_ro_guard *g);

/* The watchdog: db is interrupted once the monotonic clock passes
 * deadline_ns, until disarmed. A watch lives in its caller's frame. */
struct cw_ro_watch {
	struct cw_ro_watch *prev, *next;
	sqlite3 *db;
	uint64_t deadline_ns;
	int fired;
};
int cw_ro_watch_arm(struct cw_ro_watch *w, sqlite3 *db, uint64_t deadline_ns);
/* Returns 1 when the watchdog interrupted the statement. */
int cw_ro_watch_disarm(struct cw_ro_watch *w);

/* ro_heap.c: installs the counting allocator (before SQLite initializes;
 * a no-op after). Then, on this thread, between begin and end, SQLite
 * allocations past limit bytes fail with SQLITE_NOMEM. */
void cw_ro_heap_install(void);
void cw_ro_heap_begin(int64_t limit);
/* Returns 1 when an allocation was refused since begin. */
int cw_ro_heap_end(void);
int cw_ro_heap_refused(void);
/* Charges n bytes (negative: gives them back) that the statement's caller
 * holds on this thread between begin and end to the same bound: memory a
 * result takes as it is built counts with SQLite's. 0, or -ENOMEM (and
 * refused) when it would pass the limit; 0 outside begin..end. */
int cw_ro_heap_charge(int64_t n);

#endif
