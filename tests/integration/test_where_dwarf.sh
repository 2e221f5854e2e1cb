#!/bin/bash
# causeway where unwinds native stacks through DWARF call-frame information.
#
# 1. A C program built without frame pointers (tests/fixtures/nofp_workload.c,
#    -O2 -fomit-frame-pointer): frame pointers alone give a short stack
#    (--frame-pointers), DWARF gives every function down to main. The same
#    program stripped, with its symbols only in a build-id debug file under
#    /usr/lib/debug of its own mount namespace (the host's has none): the
#    names come from that file, found through /proc/PID/root.
# 2. A real PyTorch CPU training loop (nn.Linear, forward, backward, SGD
#    step) under Debian sid's python3.14 and python3-torch, chroot'ed in its
#    own mount and PID namespaces as a container runs it, held inside
#    libtorch's autograd engine by a custom Function whose backward sleeps.
#    Oracles: the interpreter's own sys._current_frames for the Python
#    frames, Debian's gdb (`thread apply all bt` on the same process, right
#    after where, while the thread still sleeps in the same call) for the
#    native ones.
#
# Comparison rule against gdb, main thread: gdb's physical frames (lines
# "#N  0xADDR in ...", plus #0; inlined frames, printed without an address,
#  are not separate stack frames) including those it shows as "??"; where
# must show at least as many, unwinder "dwarf", and frame by frame the same
# object (gdb's "from" file, or the executable) and, where gdb names the
# function, the same name (up to its parameter list).
set -u
[ "$(id -u)" = 0 ] || { echo "needs root to ptrace another process"; exit 77; }
F=$CW_BUILD/fixtures
[ -x "$F/nofp_workload" ] || { echo "FAIL: fixture $F/nofp_workload missing (make fixtures)"; exit 1; }
command -v gdb >/dev/null || { echo "FAIL: gdb missing (scripts/install-deps.sh)"; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { { for p in "${pids[@]}"; do kill -KILL "$p"; done; wait; } 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0

start() { # start OUTFILE CMD... -> $pid once OUTFILE has "ready"
	local out=$1
	shift
	"$@" > "$out" 2>&1 &
	pids+=("$!")
	pid=$!
	for _ in $(seq 1 100); do grep -q ready "$out" && { sleep 0.1; return 0; }; sleep 0.05; done
	echo "FAIL: $* did not start: $(cat "$out")"
	return 1
}

check_nofp() { # check_nofp JSON LABEL: every function of the chain, dwarf
	python3 - "$1" "$2" <<'PY'
import json, sys
got = json.load(open(sys.argv[1])); label = sys.argv[2]
t = [t for t in got["threads"] if t["main"]][0]
names = [n.split("!")[1].split("+")[0] if "!" in n else n for n in t.get("native", [])]
want = ["nofp_inner", "nofp_middle", "nofp_outer", "main"]
if names[:4] != want or t.get("native_unwinder") != "dwarf":
    sys.exit(f"FAIL {label}: {t.get('native_unwinder')} {t.get('native')}, want prefix {want} by dwarf")
PY
}

# 1a. without frame pointers
if start "$tmp/nofp.out" "$F/nofp_workload"; then
	"$CW_BIN" where --json "$pid" > "$tmp/nofp.json" || { echo "FAIL: where nofp rc=$?"; fail=1; }
	check_nofp "$tmp/nofp.json" nofp || fail=1
	# the fixture really needs DWARF: the frame-pointer walk stops early
	"$CW_BIN" where --json --frame-pointers "$pid" > "$tmp/nofp_fp.json" || { echo "FAIL: where --frame-pointers"; fail=1; }
	python3 - "$tmp/nofp_fp.json" <<'PY' || fail=1
import json, sys
t = json.load(open(sys.argv[1]))["threads"][0]
if t.get("native_unwinder") != "frame-pointer" or any("nofp_outer" in n for n in t["native"]):
    sys.exit(f"FAIL: frame pointers reached nofp_outer: {t}")
PY
	grep -q '^  native (dwarf):$' <("$CW_BIN" where "$pid") || { echo "FAIL: text lacks 'native (dwarf):'"; fail=1; }
	kill "$pid"
fi

# 1b. stripped; symbols only in a build-id debug file of its own namespace
objcopy --only-keep-debug "$F/nofp_workload" "$tmp/nofp.debug"
cp "$F/nofp_workload" "$tmp/nofp_stripped"
strip --strip-all "$tmp/nofp_stripped"
id=$(readelf -n "$tmp/nofp_stripped" | sed -n 's/.*Build ID: *//p')
mkdir -p "$tmp/dbg/.build-id/${id:0:2}"
cp "$tmp/nofp.debug" "$tmp/dbg/.build-id/${id:0:2}/${id:2}.debug"
[ -e "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] && { echo "FAIL: the host has this debug file"; fail=1; }
if start "$tmp/strip.out" unshare --mount --propagation private sh -c \
	'mkdir -p /usr/lib/debug && mount --bind "$1" /usr/lib/debug && exec "$2"' sh "$tmp/dbg" "$tmp/nofp_stripped"; then
	pid=$(pgrep -f "^$tmp/nofp_stripped\$")
	"$CW_BIN" where --json "$pid" > "$tmp/strip.json" || { echo "FAIL: where stripped rc=$?"; fail=1; }
	check_nofp "$tmp/strip.json" stripped || fail=1
	kill "$pid"
fi

# 2. PyTorch in a Debian sid root
. "$CW_ROOT/tests/lib/debian_root.sh"
t0=$(date +%s)
root=$(debian_root sid amd64 python3.14 python3-torch) || { echo "FAIL: no Debian sid root with python3-torch"; exit 1; }
[ $(($(date +%s) - t0)) -gt 5 ] && echo "note: built the sid torch root in $(($(date +%s) - t0)) s"
W=$CW_ROOT/tests/fixtures/py/torch_train.py
line_of() { grep -n "# at:$1\$" "$W" | cut -d: -f1; }
mkdir -p "$tmp/src"
cp "$W" "$tmp/src/"
unshare --mount --pid --fork --kill-child --propagation private bash -c \
	'mount --bind "$2" "$1/mnt" && exec chroot "$1" python3.14 /mnt/torch_train.py > "$2/want"' \
	ctr "$root" "$tmp/src" 2>"$tmp/err" &
pids+=("$!")
pid=
for _ in $(seq 1 600); do
	grep -q '^{' "$tmp/src/want" 2>/dev/null && pid=$(pgrep -f '^python3.14 /mnt/torch_train.py$') && break
	sleep 0.1
done
[ -n "$pid" ] || { echo "FAIL: torch workload did not start: $(cat "$tmp/err" "$tmp/src/want")"; exit 1; }
pids+=("$pid")
"$CW_BIN" where --json "$pid" > "$tmp/torch.json" || { echo "FAIL: where torch rc=$?"; fail=1; }
# gdb from the host, on the process's own files (sysroot = its root)
timeout 120 gdb -batch -nx -iex 'set auto-load off' -iex 'set debuginfod enabled off' \
	-iex "set sysroot /proc/$pid/root" -ex "file /proc/$pid/root/usr/bin/python3.14" -ex "attach $pid" \
	-ex 'thread apply all bt' > "$tmp/gdb.txt" 2> "$tmp/gdb.err" || { echo "FAIL: gdb: $(tail -3 "$tmp/gdb.err")"; fail=1; }
grep -q "^Thread .*(LWP $pid " "$tmp/gdb.txt" || { echo "FAIL: gdb saw no main thread: $(head "$tmp/gdb.txt" "$tmp/gdb.err")"; fail=1; }
python3 - "$tmp/src/want" "$tmp/torch.json" "$tmp/gdb.txt" "$pid" "$(line_of hold)" "$(line_of backward)" <<'PY' || fail=1
import json, re, sys
want = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][0]
got = json.load(open(sys.argv[2])); gdb = open(sys.argv[3]).read()
pid, lhold, lback = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
bad = []
main = [t for t in got["threads"] if t["tid"] == pid and t["main"]]
if not main:
    sys.exit(f"FAIL: no main thread {pid} in where's output")
t = main[0]
# Python frames, as the interpreter reports them
py = [[f["file"], f["function"].split(".")[-1], f["line"]] for f in t["python"]]
if py != want["python"]:
    bad.append(f"python frames {py}\n  want {want['python']}")
if ["/mnt/torch_train.py", "backward", lhold] not in py or ["/mnt/torch_train.py", "step", lback] not in py:
    bad.append("python frames miss the hold/backward lines")
# gdb's frames of the main thread
sec = re.search(r"^Thread \d+ \(LWP %d .*?\n(.*?)(?:\n\n|\Z)" % pid, gdb, re.S | re.M)
frames = []
for l in (sec.group(1).splitlines() if sec else []):
    m = re.match(r"#(\d+)\s+(0x[0-9a-f]+ in )?(.*)$", l)
    if not m or (m.group(1) != "0" and not m.group(2)):
        continue  # an inlined frame (no address) or a continuation line
    rest, obj = m.group(3), ""
    if " from /" in rest:
        rest, obj = rest.rsplit(" from ", 1)
    frames.append((rest.split("(")[0].strip(), obj.rsplit("/", 1)[-1]))
nat = t.get("native", [])
print(f"main thread: where {len(nat)} native frames ({t.get('native_unwinder')}), gdb {len(frames)}")
if t.get("native_unwinder") != "dwarf":
    bad.append(f"unwinder {t.get('native_unwinder')}: {t.get('native_dwarf_error')}")
if len(frames) < 10:
    bad.append(f"gdb's stack is too short to compare ({len(frames)}): {sec.group(1) if sec else gdb[:500]}")
if len(nat) < len(frames):
    bad.append(f"where has {len(nat)} frames, gdb {len(frames)}")
if not any("libtorch_cpu.so" in n and "Engine::" in n for n in nat):
    bad.append("no libtorch autograd engine frame")
for i, (fn, obj) in enumerate(frames):
    if i >= len(nat):
        break
    ours = nat[i]
    oobj = ours.split("!")[0].split("+")[0]
    want_obj = obj.split(".so")[0] if obj else "python3.14"
    if not oobj.startswith(want_obj):
        bad.append(f"frame {i}: object {oobj}, gdb {obj or 'the executable'}")
    if fn != "??" and "!" in ours:
        if ours.split("!", 1)[1].split("(")[0].rsplit("+", 1)[0] != fn.split("(")[0]:
            bad.append(f"frame {i}: {ours}, gdb {fn}")
    elif fn != "??":
        bad.append(f"frame {i}: {ours} has no name, gdb {fn}")
if bad:
    print("FAIL torch:\n  " + "\n  ".join(bad))
    print("where:\n  " + "\n  ".join(nat))
    sys.exit(1)
PY
exit $fail
