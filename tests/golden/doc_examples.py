#!/usr/bin/env python3
"""Every causeway command line the documentation shows, checked against the
binary: README.md, docs/*.md, the alert runbooks (deploy/prometheus) and each
command's own --help examples.

  doc_examples.py BIN SANDBOX FILE...

A line is a command when its program is causeway (also build/causeway,
./causeway; after `$ `, `sudo ` or VAR=value), in a shell code block or an
inline `code` span. Then:
  - a synopsis (brackets, `...`, CAPITAL placeholders): the command exists
    and every --flag it names is in the command's --help;
  - a line that needs root, a network, a process or stdin (trace, serve,
    where, mcp, --nodes, --fleet): the command's own parser reads it
    (`causeway --check-args ...`: exit 0, 2 on a flag error);
  - anything else runs in SANDBOX (demo databases under the names the docs
    use) and must exit 0 (7, "matches no data", for tenant filters).
Blocks fenced as text, json, yaml, sql or promql are output, not commands.
Prints one line per failure and exits 1 when there is any.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

BIN, SANDBOX, FILES = sys.argv[1], sys.argv[2], sys.argv[3:]
SHELL_FENCES = {"", "sh", "shell", "bash", "console"}
PARSE_ONLY_CMDS = {"trace", "serve", "where", "mcp"}
PARSE_ONLY_FLAGS = {"--nodes", "--fleet", "--listen", "--otlp"}
GLOBAL_VALUE_FLAGS = {"--config", "--node"}
PROGRAMS = {"causeway", "build/causeway", "./build/causeway", "./causeway"}
# Runbook templating and elided paths, as an operator fills them in.
SUBST = [
    (re.compile(r"\{\{\s*\$labels\.pid\s*\}\}"), "4821"),
    (re.compile(r"\{\{[^}]*\}\}"), "x"),
    (re.compile(r"(--db) \.\.\.(?=\s|$)"), r"\1 causeway.db"),
    # The DaemonSet's store (deploy/): the sandbox's demo database stands in.
    (re.compile(r"/var/lib/causeway/causeway\.db"), "causeway.db"),
    (re.compile(r"/etc/causeway/causeway\.yaml"), os.path.join(SANDBOX, "base", "causeway.yaml")),
]
PLACEHOLDER = re.compile(r"(?<![\w/.-])[A-Z][A-Z0-9_]*(?::[A-Z]+)?(?![\w.])")

helps = {}


def help_of(cmd):
    if cmd not in helps:
        p = subprocess.run([BIN, cmd, "--help"], capture_output=True, text=True)
        helps[cmd] = p.stdout if p.returncode == 0 else None
    return helps[cmd]


def candidates(path):
    """(line number, text) of every shell line and inline span of path."""
    text = open(path, encoding="utf-8").read()
    out = []
    lines = text.split("\n")
    i = 0
    in_block = False
    fence = ""
    block = []
    for n, line in enumerate(lines, 1):
        m = re.match(r"^\s*```(\S*)", line)
        if m and not in_block:
            in_block, fence, block = True, m.group(1).lower(), []
            continue
        if m and in_block:
            in_block = False
            if fence in SHELL_FENCES:
                out.extend(block_commands(block))
            continue
        if in_block:
            block.append((n, line))
            continue
        for s in re.finditer(r"`([^`]+)`", line):
            out.append((n, s.group(1)))
    return out


def block_commands(block):
    joined, cur, start = [], "", 0
    for n, line in block:
        if not cur:
            start = n
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        joined.append((start, cur + line))
        cur = ""
    if cur:
        joined.append((start, cur))
    prompts = [(n, l.strip()[2:]) for n, l in joined if l.strip().startswith("$ ")]
    return prompts if prompts else [(n, l.strip()) for n, l in joined]


def split_segments(line):
    """The commands of a compound line (&&, ||, ;); a pipe's left side."""
    segs = re.split(r"\s(?:&&|\|\||;)\s", line)
    return [re.split(r"\s\|\s", s)[0].strip() for s in segs]


def tokens_of(seg):
    try:
        toks = shlex.split(seg, comments=True)
    except ValueError:
        return None
    while toks and (toks[0] == "sudo" or re.match(r"^[A-Z_][A-Z0-9_]*=", toks[0])):
        toks = toks[1:]
    return toks


def command_word(args):
    """Index of the command after the global flags, or None."""
    i = 0
    while i < len(args):
        a = args[i]
        if a in GLOBAL_VALUE_FLAGS:
            i += 2
        elif a.startswith("--config=") or a in ("-v", "--verbose", "--check-args"):
            i += 1
        else:
            return i
    return None


def check(path, n, seg, failures, counts):
    for rx, rep in SUBST:
        seg = rx.sub(rep, seg)
    toks = tokens_of(seg)
    if not toks or toks[0] not in PROGRAMS:
        return
    args = toks[1:]
    where = f"{path}:{n}: {seg.strip()}"
    if not args:
        return
    k = command_word(args)
    if k is None:
        return
    cmd = args[k]
    if cmd == "help" and any(PLACEHOLDER.fullmatch(a) for a in args[k + 1:]):
        counts["synopsis"] += 1  # `causeway help COMMAND`
        return
    if cmd in ("--version", "--help", "-h", "help"):
        p = subprocess.run([BIN] + args, capture_output=True, text=True, cwd=SANDBOX, stdin=subprocess.DEVNULL)
        counts["run"] += 1
        if p.returncode:
            failures.append(f"{where}: exit {p.returncode}: {p.stderr.strip()[:200]}")
        return
    # Output and prose ("causeway 0.1.0 (commit ...", "causeway demo: incident")
    # never look like a command word.
    if not re.fullmatch(r"[a-z][a-z-]*", cmd):
        return
    h = help_of(cmd)
    if h is None:
        failures.append(f"{where}: no command \"{cmd}\"")
        return
    rest = args[k + 1:]
    if not rest:
        return  # `causeway merge` in prose names the command: it exists
    synopsis = ("[" in seg or "..." in seg or
                any(PLACEHOLDER.fullmatch(t.split("=")[0]) or PLACEHOLDER.search(t) and ":" in t for t in rest))
    if synopsis:
        counts["synopsis"] += 1
        for f in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])", seg):
            if f in GLOBAL_VALUE_FLAGS or f in ("--check-args", "-v"):
                continue
            if not re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", h):
                failures.append(f"{where}: {f} is not in 'causeway {cmd} --help'")
        return
    shell = re.sub(r"^(\s*)(sudo\s+)?(\./)?(build/)?causeway(?=\s)", r"\1causeway", seg)
    parse_only = cmd in PARSE_ONLY_CMDS or any(a.split("=")[0] in PARSE_ONLY_FLAGS for a in rest)
    if parse_only:
        counts["parsed"] += 1
        shell = re.sub(r"^(\s*)causeway(?=\s)", r"\1causeway --check-args", shell)
        # Only the causeway command itself: redirections and pipes aside.
        shell = re.split(r"\s[|>]", shell)[0]
    else:
        counts["run"] += 1
    env = dict(os.environ, PATH=os.path.join(SANDBOX, "bin") + ":" + os.environ["PATH"], HOME=SANDBOX)
    # Each line runs in a directory of its own that sees the prepared
    # files (links), less the file it writes with -o: the docs show each
    # line on a fresh start.
    scratch = tempfile.mkdtemp(dir=SANDBOX)
    t0 = time.monotonic()
    base = os.path.join(SANDBOX, "base")
    for f in os.listdir(base):
        os.symlink(os.path.join(base, f), os.path.join(scratch, f))
    for i, a in enumerate(rest[:-1]):
        if a in ("-o", "--output") and os.path.lexists(os.path.join(scratch, rest[i + 1])):
            os.unlink(os.path.join(scratch, rest[i + 1]))
    try:
        p = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, cwd=scratch, env=env,
                           timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        failures.append(f"{where}: still running after 60 s")
        return
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if os.environ.get("CW_DOC_TIMES"):
            print(f"{time.monotonic() - t0:6.2f}s {where}", file=sys.stderr)
    ok = {0, 7} if not parse_only else {0}
    if cmd == "check":
        ok.add(4)  # an item failed on this host: the line itself is right
    if p.returncode not in ok:
        failures.append(f"{where}: exit {p.returncode}: {(p.stderr.strip() or p.stdout.strip())[:240]}")


def main():
    failures = []
    counts = {"run": 0, "parsed": 0, "synopsis": 0}
    for path in FILES:
        if path.startswith("help:"):
            cmd = path[5:]
            h = help_of(cmd) or ""
            ex = re.search(r"^examples:\n((?:  .*\n?)*)", h, re.M)
            lines = [(0, l.strip()) for l in (ex.group(1).splitlines() if ex else [])]
            path = f"causeway {cmd} --help"
        else:
            lines = candidates(path)
        for n, line in lines:
            for seg in split_segments(line):
                check(path, n, seg, failures, counts)
    for f in failures:
        print("FAIL:", f)
    print(f"{counts['run']} run, {counts['parsed']} parsed only, {counts['synopsis']} synopses checked, "
          f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
