#!/usr/bin/env python3
"""Hostile variants of a causeway database, for the readers' robustness test.

usage: hostile_db.py BASE.db OUTDIR [--long]

BASE is a database `causeway demo` wrote. Each variant is a copy of it with
one kind of damage a hostile or broken trace can carry: invalid UTF-8 in
every text column (names included), INT64 extremes and negative values in
every integer column (times and counters included), NULLs and wrong types
where values are expected, huge strings, broken JSON columns, a wrong
user_version, missing tables, a truncated or foreign file. --long adds one
variant per (table, column) for each value kind instead of one per kind.

Prints one line per variant on stdout: NAME<TAB>FLAGS, FLAGS a comma list:
  badutf8  text columns hold invalid UTF-8 (the readers must show U+FFFD)
  nodb     not a readable causeway database (a clean error is the answer)
"""
import os
import random
import shutil
import sqlite3
import sys

I64_MIN = -(2 ** 63)
I64_MAX = 2 ** 63 - 1
# Bytes no UTF-8 decoder accepts: a stray continuation, a truncated
# sequence, an overlong '/', a surrogate, a lone 0xff.
BAD = b"\x80|\xc3|\xc0\xaf|\xed\xa0\x80|\xff"


def tables(db):
    return [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def columns(db, t):
    """(name, declared type, is the rowid alias) of each column."""
    out = []
    for cid, name, typ, notnull, dflt, pk in db.execute('PRAGMA table_info("%s")' % t):
        out.append((name, (typ or "").upper(), pk == 1 and (typ or "").upper() == "INTEGER"))
    return out


def text_cols(db, t):
    return [c for c, typ, _ in columns(db, t) if "TEXT" in typ]


def int_cols(db, t):
    return [c for c, typ, rowid in columns(db, t) if "INT" in typ and not rowid]


def each(db, sql, *args):
    # One column at a time; a value a UNIQUE index refuses leaves that row as it was.
    try:
        db.execute(sql, args)
    except sqlite3.Error:
        pass


def copy(base, out):
    shutil.copyfile(base, out)
    db = sqlite3.connect(out)
    db.execute("PRAGMA journal_mode = DELETE")
    return db


def set_text(db, only=None):
    for t in tables(db):
        for c in text_cols(db, t):
            if only and (t, c) not in only:
                continue
            each(db, 'UPDATE OR IGNORE "%s" SET "%s" = CAST(? AS TEXT) || "%s" || CAST(? AS TEXT) '
                 'WHERE "%s" IS NOT NULL' % (t, c, c, c), BAD, BAD)


def set_int(db, value, only=None):
    for t in tables(db):
        for c in int_cols(db, t):
            if only and (t, c) not in only:
                continue
            each(db, 'UPDATE OR IGNORE "%s" SET "%s" = %s' % (t, c, value))


TIME_WORDS = ("ns", "wall", "mono", "t", "dur", "second", "off", "base", "us", "_ms")


def is_time(c):
    return c in ("t", "dur", "second") or any(c.endswith(w) for w in TIME_WORDS[4:]) or "_ns" in c


def times_extreme(db):
    # Half the rows at the bottom of the range, half at the top: the widest
    # window there is, and every difference in it overflows.
    for t in tables(db):
        for c in int_cols(db, t):
            if is_time(c):
                each(db, 'UPDATE OR IGNORE "%s" SET "%s" = CASE WHEN rowid %% 2 THEN %d ELSE %d END'
                     % (t, c, I64_MIN, I64_MAX))


def counters(db, value):
    each(db, "UPDATE counters SET value = %d" % value)
    each(db, "UPDATE aggregates SET count = %d, sum_ns = %d, max_ns = %d" % (value, value, value))
    for t in tables(db):
        for c in int_cols(db, t):
            if c in ("count", "slow_count", "bytes", "value", "lost", "stored", "events"):
                each(db, 'UPDATE OR IGNORE "%s" SET "%s" = %d' % (t, c, value))


def strip_constraints(db):
    # NOT NULL cannot be switched off; the same tables without constraints
    # (or indexes) take the NULLs and the wrong types a foreign writer left.
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute("PRAGMA legacy_alter_table = ON")  # the views are left naming the new tables
    for t in tables(db):
        cols = ", ".join('"%s"' % c for c, _, _ in columns(db, t))
        decl = ", ".join('"%s" %s' % (c, typ) for c, typ, _ in columns(db, t))
        db.execute('CREATE TABLE "x_%s" (%s)' % (t, decl))
        db.execute('INSERT INTO "x_%s" SELECT %s FROM "%s"' % (t, cols, t))
        db.execute('DROP TABLE "%s"' % t)
        db.execute('ALTER TABLE "x_%s" RENAME TO "%s"' % (t, t))


def nulls(db):
    strip_constraints(db)
    for t in tables(db):
        for c, _, _ in columns(db, t):
            if c != "id":
                each(db, 'UPDATE "%s" SET "%s" = NULL WHERE rowid %% 3 = 0' % (t, c))


def wrong_types(db):
    strip_constraints(db)
    for t in tables(db):
        for c, typ, _ in columns(db, t):
            if c == "id":
                continue
            if "INT" in typ:
                each(db, 'UPDATE "%s" SET "%s" = CAST(? AS TEXT) WHERE rowid %% 2 = 0' % (t, c), b"12x\xff")
                each(db, 'UPDATE "%s" SET "%s" = 1e300 WHERE rowid %% 4 = 1' % (t, c))
            elif "TEXT" in typ:
                each(db, 'UPDATE "%s" SET "%s" = X\'00ff41\' WHERE rowid %% 2 = 0' % (t, c))
                each(db, 'UPDATE "%s" SET "%s" = -1.5e308 WHERE rowid %% 4 = 1' % (t, c))
            elif "REAL" in typ:
                each(db, 'UPDATE "%s" SET "%s" = CAST(? AS TEXT) WHERE rowid %% 2 = 0' % (t, c), b"nan\xff")
            elif "BLOB" in typ:
                each(db, 'UPDATE "%s" SET "%s" = \'not a blob\' WHERE rowid %% 2 = 0' % (t, c))


def huge_strings(db):
    big = "x" * (1 << 18)
    for t in tables(db):
        for c in text_cols(db, t):
            each(db, 'UPDATE OR IGNORE "%s" SET "%s" = "%s" || ? WHERE rowid IN (SELECT rowid FROM "%s" LIMIT 1)'
                 % (t, c, c, t), big)


def broken_json(db):
    deep = "[" * 100000
    each(db, "UPDATE py_stacks SET frames = CASE WHEN rowid % 2 THEN '{\"a\":' ELSE ? END", deep)
    each(db, "UPDATE chains SET json = ?", deep)
    each(db, "UPDATE aggregates SET hist = randomblob(7)")


def write_variants(base, out, long_form):
    made = []
    db0 = sqlite3.connect(base)
    tcols = [(t, c) for t in tables(db0) for c in text_cols(db0, t)]
    icols = [(t, c) for t in tables(db0) for c in int_cols(db0, t)]
    db0.close()

    def variant(name, fn, flags=""):
        path = os.path.join(out, name + ".db")
        db = copy(base, path)
        fn(db)
        db.commit()
        db.close()
        made.append((name, flags))

    variant("utf8_every_text", lambda db: set_text(db), "badutf8")
    variant("utf8_names", lambda db: set_text(db, {("sessions", "command"), ("sessions", "node"),
                                                   ("call_threads", "comm"), ("threads", "comm"),
                                                   ("processes", "comm"), ("kernel_names", "name"),
                                                   ("strings", "text"), ("cgroups", "container"),
                                                   ("py_stacks", "user_file"), ("py_stacks", "user_function")}),
            "badutf8")
    for label, v in (("min", I64_MIN), ("max", I64_MAX), ("neg1", -1), ("zero", 0)):
        variant("int_" + label, lambda db, v=v: set_int(db, v))
    variant("int_negative", lambda db: set_int(db, "-abs(rowid) - 1"))
    variant("times_extreme", times_extreme)
    variant("counters_min", lambda db: counters(db, I64_MIN))
    variant("counters_max", lambda db: counters(db, I64_MAX))
    variant("nulls", nulls)
    variant("wrong_types", wrong_types)
    variant("huge_strings", huge_strings)
    variant("broken_json", broken_json)
    for v in (-5, 2147483647, 0):
        variant("user_version_%s" % str(v).replace("-", "neg"),
                lambda db, v=v: db.execute("PRAGMA user_version = %d" % v), "nodb")
    for t in ("calls", "sessions", "aggregates", "strings"):
        variant("missing_" + t, lambda db, t=t: db.execute('DROP TABLE IF EXISTS "%s"' % t))

    size = os.path.getsize(base)
    rnd = random.Random(23)
    for name, data in (("truncated_100", open(base, "rb").read(100)),
                       ("truncated_half", open(base, "rb").read(size // 2)),
                       ("garbage", bytes(rnd.getrandbits(8) for _ in range(8192))),
                       ("text_file", b"not a database\n" * 100)):
        with open(os.path.join(out, name + ".db"), "wb") as f:
            f.write(data)
        made.append((name, "nodb" if name != "truncated_half" else ""))

    if long_form:
        # An old version over today's tables: read through the compatibility
        # views, correct but slow under ASan.
        variant("user_version_1", lambda db: db.execute("PRAGMA user_version = 1"))
        for t, c in tcols:
            variant("utf8_%s_%s" % (t, c), lambda db, t=t, c=c: set_text(db, {(t, c)}), "badutf8")
        for label, v in (("min", I64_MIN), ("max", I64_MAX), ("neg", -1)):
            for t, c in icols:
                variant("int_%s_%s_%s" % (label, t, c), lambda db, v=v, t=t, c=c: set_int(db, v, {(t, c)}))
    return made


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    base, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name, flags in write_variants(base, out, "--long" in sys.argv[3:]):
        print("%s\t%s" % (name, flags))


if __name__ == "__main__":
    main()
