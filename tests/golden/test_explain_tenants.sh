#!/bin/bash
# explain's tenant filters on the noisy-neighbour demo (two pods): the
# trainer's pod by name, UID, container id prefix or parent cgroup path
# keeps its chains; the neighbour's pod (no CUDA calls) and an unrelated
# slice keep none; bad values are refused with one line.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
db=$tmp/nn.db
"$CW_BIN" demo noisy-neighbour --db "$db" >/dev/null 2>&1 || fail "demo"
kinds() { "$CW_BIN" explain --db "$db" --no-store --json "$@" |
	python3 -c 'import json,sys; print(" ".join(sorted(c["root_cause"]["kind"] + "@" + (c["container"] or {}).get("pod", "?") for c in json.load(sys.stdin)["chains"])))'; }
all=$(kinds)
[ "$all" = "noisy_neighbour@vit-train-0 noisy_neighbour@vit-train-0" ] || fail "unfiltered: $all"
for f in "--pod vit-train-0" "--pod 4b0c7a52-1f6e-4d3a-9c2b-8e7f6a5d4c3b" "--container 9d2f4c1a" \
	"--cgroup /kubepods.slice" "--cgroup /sys/fs/cgroup/kubepods.slice/kubepods-pod4b0c7a52_1f6e_4d3a_9c2b_8e7f6a5d4c3b.slice" \
	"--pod nosuch --pod vit-train-0" "--per-tenant"; do
	got=$(kinds $f)
	[ "$got" = "$all" ] || fail "$f: $got"
done
for f in "--pod video-transcode-7d9f" "--container 51c0ffee" "--cgroup /system.slice" "--slurm-job 42"; do
	got=$(kinds $f)
	[ -z "$got" ] || fail "$f kept chains: $got"
done
out=$("$CW_BIN" explain --db "$db" --no-store --container ZZZ 2>&1) && fail "bad --container accepted"
[ "$out" = 'causeway: explain: bad --container "ZZZ" (want 4-64 lower-case hex characters of a container id)' ] || fail "message: $out"
out=$("$CW_BIN" explain --db "$db" --no-store --json --pod 'a b' 2>&1) && fail "bad --pod accepted"
echo "$out" | python3 -c 'import json,sys; assert "bad --pod" in json.load(sys.stdin)["error"]' || fail "json error: $out"
# Text: the tenant line.
"$CW_BIN" explain --db "$db" --no-store --pod vit-train-0 | grep -q '^  tenant  pod ml/vit-train-0 (cgroup /kubepods.slice/' || fail "no tenant line"
echo ok
