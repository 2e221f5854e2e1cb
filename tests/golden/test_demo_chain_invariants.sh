#!/bin/bash
# Invariants every chain of every demo scenario keeps, whatever its kind:
# no chain names its own thread as its culprit (a victim is never its own
# cause: a hang's waiting ranks are not "time-slicing" their own GPU).
# Another thread of the same process may be one (a rank waiting for its
# own DataLoader thread): same pid, another thread name. A chain without a
# latency distribution (an event, a wait, a stall) shows counts and times,
# never "p50 0ns" or "tail 0.0x". Every fix printed as a command ("$ ")
# parses as bash and names only flags its causeway command has; advice and
# code are marked as such; no fix repeats. A chain another chain causes (a rank
# waiting on a straggler or a hang) never outranks its cause and points at
# the cause's fixes instead of advice of its own.
set -eu
BIN=${CW_BIN:?}
tmp=$(mktemp -d)
. "$CW_ROOT/tests/lib/demo_db.sh"
trap 'rm -rf "$tmp"' EXIT

n=0
for s in $("$BIN" demo --list | awk '{print $1}'); do
	demo_db "$s" "$tmp/$s.db" 2>"$tmp/err" || { echo "demo $s failed: $(cat "$tmp/err")"; exit 1; }
	"$BIN" explain --db "$tmp/$s.db" --json --no-store >"$tmp/$s.json" || { echo "explain $s failed"; exit 1; }
	python3 - "$s" "$tmp/$s.json" <<'PY'
import json, os, re, shlex, subprocess, sys
name, path = sys.argv[1:]

def fmt(ns):
    # cw_format_duration (src/util/timeutil.c)
    if ns < 1000:
        return f"{ns}ns"
    if ns < 1000000:
        return f"{ns / 1e3:.1f}us"
    if ns < 1000000000:
        return f"{ns / 1e6:.1f}ms"
    return f"{ns / 1e9:.2f}s"
chains = json.load(open(path)).get("chains") or []
sev = {"HIGH": 0, "MEDIUM": 1, "LOW": 2}
for i, c in enumerate(chains):
    cb = c.get("caused_by")
    if cb:
        # A symptom never outranks its cause and carries no advice of its own.
        causes = [k for k, x in enumerate(chains) if x["root_cause"]["kind"] == cb["kind"] and x["pid"] == cb["pid"]]
        assert all(k < i and sev[chains[k]["severity"]] <= sev[c["severity"]] for k in causes), \
            f"{name}: {c['root_cause']['kind']} (caused by {cb['kind']}) outranks its cause"
        assert len(c["fix"]) == 1 and c["fix"][0].startswith("a symptom of the " + cb["kind"]), c["fix"]
        assert c["fix_kinds"] == ["advice"], c["fix_kinds"]
for c in chains:
    kind = c["root_cause"]["kind"]
    # Every fix printed after "$ " is a command that runs as printed: it
    # parses as bash, and a causeway invocation uses flags that exist.
    assert len(c["fix_kinds"]) == len(c["fix"]), c
    assert len(set(c["fix"])) == len(c["fix"]), f"{name}: {kind} repeats a fix: {c['fix']}"
    for fx, k in zip(c["fix"], c["fix_kinds"]):
        assert k in ("command", "advice", "code"), k
        if k != "command":
            continue
        r = subprocess.run(["bash", "-n", "-c", fx], capture_output=True, text=True)
        assert r.returncode == 0, f"{name}: {kind} fix is not shell: {fx!r}: {r.stderr}"
        assert "<" not in fx.split("#")[0].replace("<<", "") or "< " in fx, f"{name}: placeholder in {fx!r}"
        words = shlex.split(fx.split("  #")[0])
        if words and words[0] == "causeway":
            helptext = subprocess.run([os.environ["CW_BIN"], words[1], "--help"], capture_output=True, text=True).stdout
            for w in words[2:]:
                if w.startswith("--"):
                    assert w.split("=")[0] in helptext, f"{name}: {fx!r}: causeway {words[1]} has no {w}"

    # One source for every number: the headline's figures are the JSON's.
    h = c["headline"]
    assert h.startswith(f"{c['python']['function']}() at {os.path.basename(c['python']['file'])}:{c['python']['line']} \u2014 ") \
        if c["python"] else " \u2014 " in h, f"{name}: {kind} headline does not lead with where: {h!r}"
    if c["expected_ns"] is not None and f"(expected ~" in h:
        assert f" {fmt(c['p99_ns'])} (expected ~{fmt(c['expected_ns'])})" in h, f"{name}: {kind}: {h!r} vs p99 {c['p99_ns']}, expected {c['expected_ns']}"
    m = re.search(r"for (\d+) % of its slow calls' time, (\d+) % of that by", h)
    if m:
        # JSON rounds shares to 3 decimals, the text to whole percents.
        assert abs(int(m.group(1)) - c["explained_share"] * 100) <= 0.51, f"{name}: {h!r} vs explained_share {c['explained_share']}"
        assert abs(int(m.group(2)) - c["evidence"]["culprit_share"] * 100) <= 0.51, f"{name}: {h!r} vs culprit_share {c['evidence']['culprit_share']}"
    if kind in ("cpu_preemption", "noisy_neighbour") and c["culprit"]:
        assert m, f"{name}: {kind} headline names no share for its culprit: {h!r}"

    cul = c.get("culprit") or {}
    assert cul.get("pid") is None or cul["pid"] != c["pid"] or cul.get("comm") != c["comm"], \
        f"{name}: {kind} chain names its own pid {c['pid']} ({c['comm']}) as its culprit"
PY
	"$BIN" explain --db "$tmp/$s.db" --no-store >"$tmp/$s.txt" || { echo "explain $s (text) failed"; exit 1; }
	if grep -E 'p(50|99) 0ns|tail 0\.0x' "$tmp/$s.txt"; then
		echo "$s: a chain shows an empty latency distribution"
		exit 1
	fi
	n=$((n + 1))
done
[ "$n" -ge 28 ] || { echo "only $n demo scenarios listed"; exit 1; }
echo "ok: $n scenarios"
