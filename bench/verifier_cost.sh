#!/bin/bash
# verifier_cost.sh BUILD [REPS]: what loading causeway's BPF costs at start-up,
# per program: the instructions the verifier processed (exact, from the
# kernel) and each object's load time (median of REPS `check` runs, which load
# and unload every object as trace would). Three kernel classes on this one
# kernel (CW_KFEATURES_OFF takes probed features away): this kernel as it is,
# a 6.1-class kernel (no uprobe_multi, sessions or VMA iterator: per-probe
# programs) and a 5.15-class one (also no bpf_loop: the cuda_noloop build).
# Run as root on a quiet machine.
set -u
BUILD=${1:-build}
REPS=${2:-5}
BIN=$BUILD/causeway
[ "$(id -u)" = 0 ] || { echo "verifier_cost: needs root (BPF)"; exit 1; }
[ -x "$BIN" ] || { echo "verifier_cost: no $BIN (make)"; exit 1; }
command -v jq >/dev/null || { echo "verifier_cost: needs jq"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
classes=("this kernel:" "6.1 class:uprobe_multi,uprobe_session,vma_iter"
	"5.15 class:bpf_loop,sched_switch_state,sleepable_uprobe,sock_length,block_io_start,uprobe_multi,uprobe_session,vma_iter")
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
echo "kernel $(uname -r), $(clang --version | head -1), $REPS runs each"
for c in "${classes[@]}"; do
	IFS=: read -r name off <<<"$c"
	for r in $(seq "$REPS"); do
		CW_KFEATURES_OFF=$off "$BIN" check --json >"$T/$r.json" 2>/dev/null
	done
	echo
	echo "== $name${off:+ (without $off)}"
	printf '%-28s %10s\n' "object" "load ms"
	jq -r '.checks[] | select(.name | startswith("load ")) | .name' "$T/1.json" | while read -r obj; do
		ms=$(for r in $(seq "$REPS"); do
			jq -r --arg o "$obj" '.checks[] | select(.name == $o) | .detail' "$T/$r.json" |
				sed -n 's/^loads in \([0-9]*\) ms.*/\1/p'
		done | median)
		printf '%-28s %10s\n' "$obj" "${ms:-fail}"
	done
	printf '%-28s %-24s %12s\n' "object" "program" "insns"
	jq -r '.bpf_programs[] | select(.loaded) | "\(.object)\t\(.program)\t\(.verified_insns)"' "$T/1.json" |
		awk -F'\t' '{printf "%-28s %-24s %12s\n", $1, $2, $3}'
done
