#!/usr/bin/env python3
"""Prints, NUL-separated, every SQL statement the articles in DIR show:
from an upper-case SELECT (or WITH) to the ';' that ends it, or to the
closing quote of the shell argument it is in. Comment lines (--) inside
are kept; statements are de-indented as printed."""
import pathlib
import re
import sys

d = pathlib.Path(sys.argv[1])
out = []
for f in sorted(d.glob("*.txt")):
    text = f.read_text(encoding="utf-8", errors="replace")
    for m in re.finditer(r'(?m)(^|")\s*((?:SELECT|WITH)\s.*?)(;|"|\n\s*\n)', text, re.S):
        sql = m.group(2).strip()
        # Prose ("SELECT queries ...") is not SQL: a statement reads FROM something.
        if not re.search(r"\bFROM\s+\w+", sql):
            continue
        out.append(f"{f.name}\t{sql}")
sys.stdout.write("\0".join(out))
