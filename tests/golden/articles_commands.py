#!/usr/bin/env python3
"""Prints, one JSON object a line, every command line and MCP tool call the
articles in DIR show:
  {"article": FILE, "line": N, "kind": "command", "argv": [...]}
      a line that starts with the articles' binary name (after an optional
      "$ " prompt and "sudo"), backslash continuations and quoted
      arguments that go on over lines joined, split as the
      shell would; argv leaves the binary name out.
  {"article": FILE, "line": N, "kind": "tool", "name": NAME, "arguments": {...}}
      a line that is a call NAME(key="value", ...) alone."""
import json
import pathlib
import re
import shlex
import sys

BINARY = "ingero"  # the name the articles give the tool


def extract(d):
    """The entries of every article in directory d, in file and line order."""
    out = []
    for f in sorted(pathlib.Path(d).glob("*.txt")):
        out += extract_file(f)
    return out


def extract_file(f):
    out = []
    lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
    i = 0
    while i < len(lines):
        start = i
        text = lines[i].strip()
        m = re.match(r"^(?:\$\s+)?(?:sudo\s+)?" + BINARY + r"\s+(.*)$", text)
        if m:
            cmd = m.group(1)
            while True:
                if cmd.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    cmd = cmd[:-1] + " " + lines[i].strip()
                    continue
                try:
                    argv = shlex.split(cmd, comments=True)
                    break
                except ValueError:  # a quoted argument goes on on the next line
                    if i + 1 == len(lines):
                        raise
                    i += 1
                    cmd += "\n     " + lines[i].strip()
            out.append({"article": f.name, "line": start + 1, "kind": "command", "argv": argv})
        t = re.match(r"^([a-z_]+)\(((?:\s*[a-z_]+=\"[^\"]*\"\s*,?)*)\)$", text)
        if t:
            args = dict(re.findall(r'([a-z_]+)="([^"]*)"', t.group(2)))
            out.append({"article": f.name, "line": start + 1, "kind": "tool", "name": t.group(1),
                        "arguments": args})
        i += 1
    return out


if __name__ == "__main__":
    for e in extract(sys.argv[1]):
        print(json.dumps(e))
