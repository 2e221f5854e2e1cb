# shellcheck shell=bash
# per_run: ns per run of the BPF programs that ran at least $N times, from
# the kernel's run-time statistics (sysctl kernel.bpf_stats_enabled=1), as
# "name ns" lines. Sourced by probe_runtime.sh and py_probe_runtime.sh; also
# passed into a traced command with $(declare -f per_run), so it reads the
# programs while they are still attached.
per_run() {
	bpftool prog show -j | python3 -c '
import json, sys
n = int(sys.argv[1])
for p in json.load(sys.stdin):
    if p.get("run_cnt", 0) >= n:
        print(p.get("name", "?"), round(p["run_time_ns"] / p["run_cnt"]))' "$N"
}
