#!/bin/bash
# A 3 s incident in a recorded hour at full rate: tests/fixtures/hour_db
# writes an hour of a sync loop at RATE calls/s through the product's
# pipeline and writer under a CAP size cap (an always-on agent's store:
# ordinary calls of the past pruned, the per-second aggregates whole), with
# a 3 s CPU hog (stress-ng, pid 9001) preempting every sync from 00:39:05;
# then explain over the whole hour, over a 20 s window around the incident,
# and over a 20 s trace of the same incident. Prints each diagnosis's
# severity, culprit and incident seconds, the time to write and to explain,
# and the file's size. The fast form is tests/golden/test_explain_hour.sh.
#   usage: bench/explain_hour.sh BUILD [RATE (30000)] [CAP_MIB (256)] [DIR]
set -eu
B=${1:?usage: bench/explain_hour.sh BUILD [RATE] [CAP_MIB] [DIR]}
RATE=${2:-30000}
CAP=${3:-256}
D=${4:-$(mktemp -d)}
fix=$B/fixtures/hour_db
[ -x "$fix" ] || { echo "build the fixtures first: make fixtures" >&2; exit 1; }
rm -f "$D"/hour.db* "$D"/t20.db*
ms() { date +%s%3N; }
t=$(ms); "$fix" "$D/hour.db" 3600 "$RATE" 2345 "$CAP"; echo "write hour: $(( $(ms) - t )) ms, $(stat -c %s "$D/hour.db") B"
"$fix" "$D/t20.db" 20 "$RATE" 8 >/dev/null
show() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
for c in d["chains"]:
    cu, ev = c.get("culprit") or {}, c["evidence"]
    print("  %s %s %s culprit %s/%s incident %s..%s calls %d" % (c["severity"], c["root_cause"]["kind"], c["op"],
          cu.get("comm"), cu.get("pid"), ev.get("incident_from_ns"), ev.get("incident_to_ns"), c["count"]))
print("  %d chains, %d calls analysed, history %s" % (len(d["chains"]), d["window"]["calls_analysed"],
      (d.get("history") or {}).get("source")))'
}
for run in 1 2 3; do
	t=$(ms); "$B/causeway" explain --db "$D/hour.db" --json --no-store >"$D/hour.json"; echo "explain hour (run $run): $(( $(ms) - t )) ms"
done
show <"$D/hour.json"
t=$(ms); "$B/causeway" explain --db "$D/hour.db" --json --no-store --from 2026-01-01T00:38:57Z --to 2026-01-01T00:39:16Z >"$D/w20.json"
echo "explain 20 s window of the hour: $(( $(ms) - t )) ms"; show <"$D/w20.json"
t=$(ms); "$B/causeway" explain --db "$D/t20.db" --json --no-store >"$D/t20.json"
echo "explain 20 s trace: $(( $(ms) - t )) ms"; show <"$D/t20.json"
