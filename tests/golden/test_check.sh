#!/bin/bash
# check: ok/warn/fail items with recommendations, --json shape, and on
# this host (root, BTF, CUDA 13 in /usr/local/cuda-13.0, pyenv 3.10-3.13)
# the facts it must find. Assertions about a component are made only when
# that component is on disk, so the test also means something elsewhere.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" check --json > "$tmp/j"
rc=$?
[ $rc = 0 ] || [ $rc = 4 ] || fail "check --json exited $rc"
python3 - "$tmp/j" "$rc" <<'PY' || exit 1
import glob, json, os, sys
r = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
checks = {c["name"]: c for c in r["checks"]}
for c in r["checks"]:
    assert c["status"] in ("ok", "warn", "fail"), c
    if c["status"] != "ok":
        assert c.get("recommendation"), c
# Exit status and "ok" agree with the items.
failed = [c["name"] for c in r["checks"] if c["status"] == "fail"]
assert r["ok"] == (not failed) and r["exit"] == rc == (4 if failed else 0), (r["ok"], rc, failed)
for name in ("kernel", "btf", "privileges", "tracefs", "bpf", "tp_btf", "uprobes",
             "cuda runtime", "cuda driver", "nccl", "python", "gpu", "gpu telemetry", "xid faults"):
    assert name in checks, name
assert checks["kernel"]["detail"].startswith("Linux " + os.uname().release), checks["kernel"]
if os.path.exists("/sys/kernel/btf/vmlinux"):
    assert checks["btf"]["status"] == "ok", checks["btf"]
else:
    assert checks["btf"]["status"] == "fail", checks["btf"]
if os.geteuid() == 0:
    assert checks["privileges"]["status"] == "ok", checks["privileges"]
    # As root the BPF probes run: ring buffers and uprobe programs exist on
    # any kernel this project supports.
    assert checks["bpf"]["status"] == "ok", checks["bpf"]
libs = r["libraries"]
for l in libs:
    if "pid" in l:
        # A copy only a running process maps (another test's workload may
        # run meanwhile): named by that process, not found on disk.
        assert set(l) >= {"kind", "path", "mapped_path", "pid", "hooked_symbols"}, l
        continue
    assert set(l) >= {"kind", "path", "real_path", "version", "soname", "hooked_symbols", "stub"}, l
    assert os.path.exists(l["real_path"]), l
if glob.glob("/usr/local/cuda-13*/lib*/libcudart.so.13*") or glob.glob("/usr/local/cuda-13*/targets/*/lib/libcudart.so.13*"):
    kinds = {}
    for l in libs:
        if "pid" not in l:
            kinds.setdefault(l["kind"], []).append(l)
    rt = [l for l in kinds.get("cudart", []) if l["version"].startswith("13")]
    assert rt and all(l["hooked_symbols"] > 0 for l in rt), kinds.get("cudart")
    assert rt[0]["soname"] == "libcudart.so.13", rt[0]
    assert any(l["hooked_symbols"] > 0 for l in kinds.get("cuda", [])), kinds.get("cuda")
    nccl = [l for l in kinds.get("nccl", []) if l["hooked_symbols"] > 0]
    assert nccl and nccl[0]["version_detail"].startswith("NCCL version 2."), nccl
    assert checks["cuda runtime"]["status"] == "ok" and checks["nccl"]["status"] == "ok", checks
# Every install check reports exists, with the build kind it claims.
pys = r["python"]
for p in pys:
    assert os.path.exists(p["path"]), p
home = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
want = set()
for m in (10, 11, 12, 13):
    if glob.glob(f"{home}/versions/3.{m}*/lib/libpython3.{m}.so.1.0"):
        want.add(m)
got = {int(p["version"].split(".")[1]) for p in pys
       if p["supported"] and p["build"] == "shared" and "/versions/" in p["path"]}
assert want <= got, (want, got)
# Debian's python3.11 is a static build that exports _PyRuntime itself.
if os.path.exists("/usr/bin/python3.11") and not os.path.exists("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"):
    deb = [p for p in pys if p["path"] == "/usr/bin/python3.11"]
    assert deb and deb[0]["build"] == "static" and deb[0]["exports_runtime"], deb
if want:
    assert checks["python"]["status"] == "ok", checks["python"]
print("check json ok:", len(libs), "libraries,", len(pys), "pythons")
PY

# Text: one line per item, recommendations after, and the verdict last.
"$CW_BIN" check > "$tmp/t"
rc=$?
[ $rc = 0 ] || [ $rc = 4 ] || fail "check exited $rc"
head -n 1 "$tmp/t" | grep -q '^status  item  *detail$' || fail "header: $(head -n 1 "$tmp/t")"
grep -Eq '^(ok|warn|fail) +btf ' "$tmp/t" || fail "no btf line"
last=$(tail -n 1 "$tmp/t")
if [ $rc = 0 ]; then [ "$last" = "trace can run here" ] || fail "verdict: $last"
else [ "$last" = "trace cannot run here: fix the failed items above" ] || fail "verdict: $last"; fi
if grep -q '^warn +tracefs' "$tmp/t"; then
	grep -q '^tracefs (warn): mount -t tracefs tracefs /sys/kernel/tracing$' "$tmp/t" || fail "tracefs recommendation"
fi

"$CW_BIN" check --help | grep -q '^usage: causeway check' || fail "--help"
"$CW_BIN" check --frob 2> "$tmp/e"; rc=$?
[ $rc = 2 ] && grep -q 'unknown option "--frob"' "$tmp/e" || fail "bad option: $rc $(cat "$tmp/e")"
"$CW_BIN" check frob 2> "$tmp/e"; rc=$?
[ $rc = 2 ] && grep -q 'unexpected argument "frob"' "$tmp/e" || fail "bad argument: $rc $(cat "$tmp/e")"

# A normal user: the kernel refuses its BPF loads, which says nothing of
# the kernel, so the advice is privileges (root, CAP_BPF+CAP_PERFMON) and
# never a kernel rebuild. The binary is copied where uid 65534 can run it.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	nb=$(mktemp -d) && chmod 755 "$nb" && cp "$CW_BIN" "$nb/causeway" || fail "copying the binary"
	(cd "$nb" && HOME="$nb" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		./causeway check --json) > "$tmp/nobody.json"
	rm -rf "$nb"
	python3 - "$tmp/nobody.json" <<'PY' || fail "check as uid 65534: $(cat "$tmp/nobody.json")"
import json, sys
items = {i["name"]: i for i in json.load(open(sys.argv[1]))["checks"]}
assert items["privileges"]["status"] == "fail", items["privileges"]
for name in ("bpf", "tp_btf"):
    i = items[name]
    assert i["status"] != "fail", i
    assert "CAP_BPF" in (i.get("recommendation") or ""), i
text = json.dumps(list(items.values()))
assert "CONFIG_BPF_SYSCALL" not in text and "use a kernel" not in text, text
PY
else
	echo "skip: the uid 65534 check needs root and setpriv (util-linux)"
fi

# The Xid source: root reads /dev/kmsg; root without CAP_SYSLOG is refused
# where kernel.dmesg_restrict is 1, and check names the capability.
# (A container without the node or refused by its device cgroup:
# integration/test_daemonset_runc.)
if [ "$(id -u)" = 0 ] && [ -c /dev/kmsg ] && command -v setpriv >/dev/null; then
	"$CW_BIN" check --json | jq -e '.checks[] | select(.name == "xid faults" and .status == "ok")' >/dev/null ||
		fail "xid faults as root: $("$CW_BIN" check | grep xid)"
	if [ "$(cat /proc/sys/kernel/dmesg_restrict)" = 1 ]; then
		setpriv --inh-caps=-all --bounding-set=-syslog "$CW_BIN" check --json >"$tmp/nosyslog.json"
		jq -e '.checks[] | select(.name == "xid faults" and .status == "warn" and
			(.detail | test("without CAP_SYSLOG")) and .recommendation == "grant CAP_SYSLOG (kernel.dmesg_restrict is 1)")' \
			"$tmp/nosyslog.json" >/dev/null || fail "xid faults without CAP_SYSLOG: $(jq -c '.checks[] | select(.name == "xid faults")' "$tmp/nosyslog.json")"
	fi
fi
echo "check ok"
