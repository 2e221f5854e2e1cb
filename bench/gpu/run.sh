#!/bin/bash
# bench/gpu/run.sh: causeway on a real GPU, in one command (docs: bench/gpu/README.md).
#
#   bench/gpu/run.sh [--dry-run] [CAUSEWAY [OUTDIR]]
#
# CAUSEWAY: the binary (default build/release/causeway-linux-x86_64; in a
# dry run build/causeway when there is no release file). OUTDIR: every output
# (default $OUT, else bench/out/gpu). Runs, each under a hard time limit and
# all within GPU_BUDGET_S (default 540 s):
#   env       the machine, the driver, Python and torch        env.txt
#   check     causeway check, text and --json                  check.txt check.json
#   timing    train_step.py untraced and traced (trace's defaults), alternated
#             GPU_ROUNDS times (default 3), GPU_STEPS timed steps each (30)
#   lines     train_step.py and infer_loop.py traced with --py-stacks all
#   infer     infer_loop.py untraced and traced (defaults)
#   queries   causeway query (summary, SQL) and explain on the traced files
#   summary   bench/gpu/summarize.py: every check's pass/fail/skipped,
#             the step-time ratio, latencies        summary.json summary.md
# Every step writes NAME.out / NAME.err; traced steps NAME.db.
# --dry-run: no GPU, no torch: the same flow through the stand-in libcudart
# (tests/fixtures, `make all fixtures`) with CPython, the GPU-only checks
# reported "skipped: dry run".
# Exit: 0 every check passed; 1 a check failed (summary.md says which);
# 2 a step failed or ran out of time (the message names it); 64 usage.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DRY=0
args=()
for a in "$@"; do
	case $a in
	--dry-run) DRY=1 ;;
	-h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option \"$a\"" >&2; exit 64 ;;
	*) args+=("$a") ;;
	esac
done
[ ${#args[@]} -le 2 ] || { echo "run.sh: usage: run.sh [--dry-run] [CAUSEWAY [OUTDIR]]" >&2; exit 64; }
CW=${args[0]:-$ROOT/build/release/causeway-linux-x86_64}
if [ $DRY = 1 ] && [ -z "${args[0]:-}" ] && [ ! -x "$CW" ]; then CW=$ROOT/build/causeway; fi
OUTDIR=${args[1]:-${OUT:-$ROOT/bench/out/gpu}}
[ -x "$CW" ] || { echo "run.sh: causeway binary \"$CW\" not found or not executable (make -j2 release-x86_64)" >&2; exit 2; }
CW=$(cd "$(dirname "$CW")" && pwd)/$(basename "$CW")
mkdir -p "$OUTDIR" || { echo "run.sh: cannot create \"$OUTDIR\"" >&2; exit 2; }
OUTDIR=$(cd "$OUTDIR" && pwd)
BUDGET=${GPU_BUDGET_S:-540}
START=$SECONDS
TRAIN=$ROOT/bench/gpu/train_step.py
INFER=$ROOT/bench/gpu/infer_loop.py

if [ $DRY = 1 ]; then
	PY=${PYTHON:-$(ls -d /root/.pyenv/versions/3.11.*/bin/python3 2>/dev/null | head -1)}
	PY=${PY:-python3}
	LIB=${CW_GPU_DRY_LIB:-$ROOT/build/fixtures/fakecuda/libcudart.so.13}
	[ -f "$LIB" ] || { echo "run.sh: dry run: stand-in libcudart \"$LIB\" missing (make -j2 all fixtures)" >&2; exit 2; }
	WL=(--dry "$LIB")
	TRACE_LIB=(--cuda-lib "$LIB")
	ROUNDS=${GPU_ROUNDS:-2} STEPS=${GPU_STEPS:-20} ITERS=${GPU_ITERS:-100}
	# The stand-in's calls take time as a GPU's would (fake_cudart.c).
	export CW_FAKE_LAUNCH_US=${CW_FAKE_LAUNCH_US:-5} CW_FAKE_SYNC_US=${CW_FAKE_SYNC_US:-300}
	export CW_FAKE_MALLOC_US=${CW_FAKE_MALLOC_US:-20} CW_FAKE_MEMCPY_US=${CW_FAKE_MEMCPY_US:-10}
else
	PY=${PYTHON:-python3}
	WL=()
	TRACE_LIB=()  # trace finds torch's libcudart, libcuda and libnccl as they are mapped
	ROUNDS=${GPU_ROUNDS:-3} STEPS=${GPU_STEPS:-30} ITERS=${GPU_ITERS:-200}
fi
[ "$STEPS" -ge 10 ] || { echo "run.sh: GPU_STEPS must be at least 10" >&2; exit 64; }
printf '%s\n' "dry=$DRY" "causeway=$CW" "python=$PY" "rounds=$ROUNDS" "steps=$STEPS" "iters=$ITERS" >"$OUTDIR/params.txt"
: >"$OUTDIR/steps.tsv"

# The summary needs only the standard library: the host's python3 when there
# is one, so a broken workload interpreter still leaves a summary.
SPY=$(command -v python3 || echo "$PY")
summarize() {  # $1: the failed step, or empty
	timeout -k 5 60 "$SPY" "$ROOT/bench/gpu/summarize.py" --out "$OUTDIR" --dry "$DRY" \
		--failed "${1:-}" --train "$TRAIN" --infer "$INFER"
}

# step NAME LIMIT_S COMMAND...: runs COMMAND with stdout in NAME.out and
# stderr in NAME.err under min(LIMIT_S, what is left of the budget).
step() {
	local name=$1 lim=$2 left rc t0
	shift 2
	left=$((BUDGET - (SECONDS - START)))
	[ $left -lt $lim ] && lim=$left
	if [ $lim -lt 5 ]; then
		echo "run.sh: step $name: out of time (budget ${BUDGET}s spent)" >&2
		printf '%s\t%s\t%s\n' "$name" 124 0 >>"$OUTDIR/steps.tsv"
		summarize "$name" >/dev/null 2>&1
		exit 2
	fi
	t0=$SECONDS
	timeout -k 5 "$lim" "$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err"
	rc=$?
	printf '%s\t%s\t%s\n' "$name" "$rc" $((SECONDS - t0)) >>"$OUTDIR/steps.tsv"
	[ $rc = 0 ] && return 0
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		echo "run.sh: step $name timed out after ${lim}s: see $OUTDIR/$name.err" >&2
	else
		echo "run.sh: step $name failed (exit $rc): $(tail -3 "$OUTDIR/$name.err" | tr '\n' ' ')" >&2
	fi
	summarize "$name" >/dev/null 2>&1
	exit 2
}

traced() {  # traced NAME [TRACE FLAGS] -- WORKLOAD...
	local name=$1
	shift
	rm -f "$OUTDIR/$name.db" "$OUTDIR/$name.db-wal" "$OUTDIR/$name.db-shm"
	step "$name" 150 "$CW" trace --db "$OUTDIR/$name.db" --no-view "${TRACE_LIB[@]}" "$@"
}

env_report() {
	echo "date: $(date -u +%FT%TZ)"
	echo "kernel: $(uname -srm)"
	echo "causeway: $("$CW" version 2>&1 | head -1)"
	echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
	echo "cpus: $(nproc)"
	if [ "$DRY" = 1 ]; then
		echo "dry run: stand-in libcudart $LIB"
	else
		"$PY" -c 'import torch; print("torch:", torch.__version__, "cuda:", torch.version.cuda,
"available:", torch.cuda.is_available(), "device:", torch.cuda.get_device_name(0))' || return 1
		nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || return 1
	fi
}

export -f env_report
export CW PY DRY LIB=${LIB:-}
step env 60 bash -c env_report
cp "$OUTDIR/env.out" "$OUTDIR/env.txt"
# check's exit status is a finding, not a failed step: keep both outputs.
timeout -k 5 60 "$CW" check >"$OUTDIR/check.txt" 2>&1
echo "check_rc=$?" >>"$OUTDIR/params.txt"
timeout -k 5 60 "$CW" check --json >"$OUTDIR/check.json" 2>"$OUTDIR/check.err"

for r in $(seq 1 "$ROUNDS"); do
	step "train-untraced-$r" 150 "$PY" "$TRAIN" "${WL[@]}" --steps "$STEPS" --out "$OUTDIR/train-untraced-$r.json"
	traced "train-traced-$r" -- "$PY" "$TRAIN" "${WL[@]}" --steps "$STEPS" --out "$OUTDIR/train-traced-$r.json"
done
traced train-lines --py-stacks all -- "$PY" "$TRAIN" "${WL[@]}" --steps "$STEPS" --out "$OUTDIR/train-lines.json"
step infer-untraced 150 "$PY" "$INFER" "${WL[@]}" --iters "$ITERS" --out "$OUTDIR/infer-untraced.json"
traced infer-traced -- "$PY" "$INFER" "${WL[@]}" --iters "$ITERS" --out "$OUTDIR/infer-traced.json"
traced infer-lines --py-stacks all -- "$PY" "$INFER" "${WL[@]}" --iters "$ITERS" --out "$OUTDIR/infer-lines.json"

# What the traced files hold, through causeway itself.
q() {  # q NAME DB SQL [PARAM...]
	local name=$1 db=$2 sql=$3
	shift 3
	local p=()
	for v in "$@"; do p+=(--param "$v"); done
	step "$name" 60 "$CW" query --db "$OUTDIR/$db.db" --json --limit 100000 "${p[@]}" "$sql"
}
for db in train-lines infer-lines train-traced-1 infer-traced; do
	step "summary-$db" 60 "$CW" query --db "$OUTDIR/$db.db"
	step "summary-$db-json" 60 "$CW" query --db "$OUTDIR/$db.db" --json
done
step explain-train 120 "$CW" explain --db "$OUTDIR/train-lines.db"
step explain-infer 120 "$CW" explain --db "$OUTDIR/infer-lines.db"
OPS_SQL="SELECT source, op, count(*) AS calls,
  sum(op LIKE 'cudaLaunchKernel%' OR op LIKE 'cuLaunchKernel%') AS launches,
  sum((op LIKE 'cudaLaunchKernel%' OR op LIKE 'cuLaunchKernel%') AND detail IS NULL) AS unnamed,
  count(DISTINCT CASE WHEN op LIKE 'cudaLaunchKernel%' OR op LIKE 'cuLaunchKernel%' THEN detail END) AS kernels
  FROM events WHERE source IN ('cuda', 'driver', 'graph', 'nccl') GROUP BY source, op ORDER BY calls DESC"
KERNELS_SQL="SELECT op, kernel_name, count(*) AS launches FROM cuda_events
  WHERE op LIKE 'cudaLaunchKernel%' OR op LIKE 'cuLaunchKernel%' GROUP BY op, kernel_name ORDER BY launches DESC"
# Per (thread kind, file, line, attribution): the first frame in user code.
LINES_SQL="SELECT CASE WHEN e.tid = e.pid THEN 'main' ELSE 'other' END AS thread, p.user_file AS file,
  p.user_line AS line, p.user_function AS function, p.python_via IS NOT NULL AS attributed, count(*) AS calls
  FROM events e JOIN py_stacks p ON p.id = e.py_stack_id
  WHERE e.source IN ('cuda', 'driver', 'graph') GROUP BY 1, 2, 3, 4, 5 ORDER BY calls DESC"
for db in train-lines infer-lines; do
	q "ops-$db" "$db" "$OPS_SQL"
	q "kernels-$db" "$db" "$KERNELS_SQL"
	q "lines-$db" "$db" "$LINES_SQL"
	q "gpu-samples-$db" "$db" "SELECT count(*) AS samples FROM gpu_samples"
done

summarize ""
rc=$?
cat "$OUTDIR/summary.md" 2>/dev/null
echo "run.sh: outputs in $OUTDIR ($((SECONDS - START)) s)"
exit $rc
