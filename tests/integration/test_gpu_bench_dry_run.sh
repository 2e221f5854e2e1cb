#!/bin/bash
# bench/gpu/run.sh --dry-run: the real-GPU benchmark's whole flow (check,
# untraced and traced training steps, the inference loop, the queries,
# summary.json and summary.md) through the stand-in libcudart with CPython.
# Every check a dry run can answer passes; the GPU-only ones say "skipped:
# dry run", never "pass". A failing step stops the run with exit 2 and
# names itself, on stderr and in summary.json.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
LIB=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$LIB" ] || fail "fixture $LIB missing (make fixtures)"
PY=$(ls -d /root/.pyenv/versions/3.11.*/bin/python3 2>/dev/null | head -1)
[ -n "$PY" ] || fail "CPython 3.11 is not installed under /root/.pyenv"
export CW_GPU_DRY_LIB=$LIB PYTHON=$PY GPU_ROUNDS=1 GPU_STEPS=10 GPU_ITERS=30

"$CW_ROOT/bench/gpu/run.sh" --dry-run "$CW_BIN" "$D/out" >"$D/stdout" 2>"$D/stderr"
rc=$?
[ $rc = 0 ] || fail "run.sh exit $rc: $(cat "$D/stderr") $(cat "$D/out/summary.md" 2>/dev/null)"
for f in summary.json summary.md check.json check.txt env.txt train-lines.db infer-lines.db \
	train-untraced-1.json train-traced-1.json explain-train.out ops-train-lines.out; do
	[ -s "$D/out/$f" ] || fail "no $f in the output folder"
done
"$PY" - "$D/out/summary.json" <<'EOF' || fail "summary: $(cat "$D/out/summary.md")"
import json, sys
s = json.load(open(sys.argv[1]))
gpu_only = {"backward_attributed", "gpu_device", "torch_kernel_names", "gpu_telemetry"}
want = {"check", "step_time_n", "kernel_names_train", "kernel_names_infer", "apis_train", "apis_infer",
        "forward_lines", "backward_thread_lines", "infer_lines", "every_launch_stored"}
got = {c["name"]: c["status"] for c in s["checks"]}
assert s["mode"] == "dry" and s["failed_step"] is None, s
for n in want:
    assert got.get(n) == "pass", (n, got.get(n))
for n in gpu_only:
    assert got.get(n) == "skipped: dry run", (n, got.get(n))
assert set(got) == want | gpu_only, set(got)
t = s["train"]
assert t["untraced_steps"] >= 10 and t["traced_steps"] >= 10, t
assert t["ratio_traced_untraced"] > 0 and t["ratio_py_stacks_all_untraced"] > 0, t
assert set(s["infer"]) >= {"untraced", "traced", "lines", "ratio_eager_p50", "ratio_graph_p50"}, s["infer"]
names = {k["kernel_name"] for k in s["kernels"]["train-lines"]}
assert "cw_dry_gemm_fwd" in names and "cw_dry_sgd_step" in names, names
EOF
grep -q "| forward_lines | pass |" "$D/out/summary.md" || fail "summary.md lacks the checks: $(cat "$D/out/summary.md")"

# A step that fails ends the run: exit 2, the step named.
PYTHON=/bin/false "$CW_ROOT/bench/gpu/run.sh" --dry-run "$CW_BIN" "$D/bad" >"$D/stdout" 2>"$D/stderr"
rc=$?
[ $rc = 2 ] || fail "a failing workload: exit $rc, want 2"
grep -q "step train-untraced-1 failed" "$D/stderr" || fail "the failed step is not named: $(cat "$D/stderr")"
grep -q '"failed_step": "train-untraced-1"' "$D/bad/summary.json" \
	|| fail "summary.json does not name the failed step: $(cat "$D/bad/summary.json")"
echo "ok: $(grep -c '| pass |' "$D/out/summary.md") checks passed, $(grep -c 'skipped: dry run' "$D/out/summary.md") skipped (dry run)"
