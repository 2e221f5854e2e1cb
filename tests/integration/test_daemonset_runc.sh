#!/bin/bash
# The agent as the DaemonSet runs it, under runc: the release image
# (scripts/build-image.sh) with exactly the args,
# environment, capabilities, mounts, hostPID, read-only root and
# no-new-privileges of deploy/kubernetes/causeway.yaml, derived from the
# manifest by tests/lib/ds_oci.py (never restated here), the ConfigMap as
# its config and the Secret's certificates as its TLS. Then:
#  - `causeway check` in the container (as `kubectl exec ds/causeway --
#    causeway check`): NVML loads and sees the fake GPU; the Xid source
#    (/dev/kmsg) is available;
#  - the readiness probe's own command passes in the container;
#  - /metrics, scraped as the ServiceMonitor does (mutual TLS, its
#    serverName, its path) and refused without a client certificate,
#    carries the fake NVML's GPU samples and the Xid this test writes to
#    the real kernel log (as root, in the driver's NVRM format) while the
#    agent runs, labelled with the node name from the pod's spec.nodeName.
#
# NVML: there is no NVIDIA runtime here. ds_oci.py emulates the toolkit's
# prestart hook, clearly labelled: for runtimeClassName nvidia with
# NVIDIA_VISIBLE_DEVICES set and "utility" in NVIDIA_DRIVER_CAPABILITIES
# it bind-mounts the node's libnvidia-ml.so.1 at the driver's own path
# (/usr/lib/x86_64-linux-gnu), as the hook does. The node's driver is the
# fake NVML (tests/fixtures/fake_nvml.c) staged under this test's own
# driver root, not in this machine's /usr/lib (other tests share it).
#
# /dev/kmsg: an unprivileged container's device cgroup refuses it (runc,
# containerd and CRI-O alike; docs/deploy.md, "Kernel log"). The manifest
# exactly as shipped is run first, and check must say so (the device
# cgroup, with CAP_SYSLOG present). The agent then runs in the documented
# configuration for Xids: the same manifest plus the device-cgroup rule a
# device plugin's allocation adds for the CharDevice volume it mounts
# (--grant-devices). The chart's other documented way, kmsg.privileged,
# is rendered (tests/lib/chart_render.py) and check must find the Xid
# source there too.
#
# CW_DS_MANIFEST=FILE runs it on another manifest (a copy with a mount or
# a capability removed must fail, naming what is missing).
set -u
: "${CW_ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (runc, BPF, /dev/kmsg)"; exit 77; }
cd "$CW_ROOT" || exit 1
for t in runc jq openssl curl nsenter; do
	command -v $t >/dev/null || fail "$t is not installed (scripts/install-deps.sh, CW_TEST_DEPS=1)"
done
python3 -c 'import yaml' 2>/dev/null || fail "python3 has no yaml module (python3-yaml)"
NVML=$CW_BUILD/fixtures/fakenvml/libnvidia-ml.so.1
[ -f "$NVML" ] || fail "missing $NVML (make fixtures)"
[ -c /dev/kmsg ] || fail "this host has no /dev/kmsg"
MANIFEST=$(realpath "${CW_DS_MANIFEST:-deploy/kubernetes/causeway.yaml}")
make -s --no-print-directory release-x86_64 >/dev/null || fail "make release-x86_64"
VERSION=$(sed -n 's/^VERSION := //p' Makefile)
T=$(mktemp -d /tmp/cw-ds.XXXXXX)
ID=cw-ds-$$
NODE=gpu-node-$$
WPID=
trap '[ -n "$WPID" ] && kill $WPID 2>/dev/null; runc delete -f $ID >/dev/null 2>&1; runc delete -f $ID-c >/dev/null 2>&1; [ -n "${CW_KEEP:-}" ] || rm -rf "$T"' EXIT

scripts/build-image.sh x86_64 "$T/img" 2>/dev/null || fail "build-image"
# The bundle as umoci would unpack it (test_release_image does, with
# umoci): the manifest's layers in order and runc's default spec with the
# image config's entrypoint, command, environment and working directory.
# tar is several times faster than umoci here; the image has no whiteouts
# (checked), the only thing tar would not apply.
B=$T/img/blobs/sha256
man=$(jq -r --arg v "$VERSION" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $v) | .digest' \
	"$T/img/index.json" | sed 's/^sha256://')
[ -f "$B/$man" ] || fail "no manifest for $VERSION in the image"
mkdir -p "$T/bundle/rootfs"
for l in $(jq -r '.layers[].digest' "$B/$man" | sed 's/^sha256://'); do
	tar -xzf "$B/$l" -C "$T/bundle/rootfs" || fail "layer $l"
done
[ -z "$(find "$T/bundle/rootfs" -name '.wh.*' -print -quit)" ] || fail "the image has whiteouts: unpack it with umoci"
runc spec -b "$T/bundle" || fail "runc spec"
jq --slurpfile ic "$B/$(jq -r .config.digest "$B/$man" | sed 's/^sha256://')" \
	'.process.args = $ic[0].config.Entrypoint + $ic[0].config.Cmd | .process.env = $ic[0].config.Env |
	.process.cwd = $ic[0].config.WorkingDir | .root.path = "rootfs"' "$T/bundle/config.json" >"$T/image-config.json" ||
	fail "the image's config"
rm -rf "$T/img"

# The Secrets the manifest's header says to create: the agent's server
# certificate (its names include the ServiceMonitor's serverName), the CA
# of allowed clients, the probes' client certificate; and Prometheus's.
P=$T/pki
mkdir -p "$P" "$T/secret"
ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
(
	cd "$P" || exit 1
	openssl req -x509 $ec -keyout ca.key -out ca.crt -days 2 -subj /CN=cw-ds-ca
	cp "$T/image-config.json" "$T/scratch.json"
	server_name=$(python3 "$CW_ROOT/tests/lib/ds_oci.py" "$MANIFEST" "$T/scratch.json" "$T/scratch" \
		--secret causeway-tls="$T/secret" --driver-root "$T" | jq -r .server_name)
	printf 'subjectAltName=DNS:%s,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' "${server_name:-causeway}" >srv.ext
	printf 'extendedKeyUsage=clientAuth\n' >cli.ext
	for n in server probe prometheus; do
		openssl req -new $ec -keyout $n.key -out $n.csr -subj /CN=$n
		openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
			-extfile "$([ $n = server ] && echo srv.ext || echo cli.ext)" -out $n.crt
	done
) >/dev/null 2>&1 || fail "openssl"
cp "$P/server.crt" "$P/server.key" "$P/probe.crt" "$P/probe.key" "$T/secret/"
cp "$P/ca.crt" "$T/secret/clients-ca.crt"
# The node's driver, where the toolkit's hook finds it (see above).
mkdir -p "$T/driver/usr/lib/x86_64-linux-gnu"
cp "$NVML" "$T/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"

# derive SOURCE OUT [--grant-devices]: the bundle's config.json for the
# manifest SOURCE; the summary (what the manifest gives) in OUT.
derive() {
	local src=$1 out=$2
	shift 2
	cp "$T/image-config.json" "$T/bundle/config.json"
	python3 "$CW_ROOT/tests/lib/ds_oci.py" "$src" "$T/bundle/config.json" "$T/vol" --node "$NODE" \
		--secret causeway-tls="$T/secret" --host-path /var/lib/causeway="$T/state" \
		--driver-root "$T/driver" "$@" >"$out" || fail "ds_oci.py could not derive the container from $src"
}
# xid_item JSON: the check's "xid faults" item.
xid_item() { jq -c '.checks[] | select(.name == "xid faults")' "$1"; }
nvml_item() { jq -c '.checks[] | select(.name == "gpu telemetry")' "$1"; }
# is FILE ITEM STATUS [DETAIL-REGEX]: check's ITEM has STATUS (an empty
# or partial report is no).
is() {
	jq -ne --arg n "$2" --arg s "$3" --arg r "${4:-}" \
		'[inputs.checks[] | select(.name == $n and .status == $s and (.detail | test($r)))] | length == 1' "$1" >/dev/null
}

# 1. The manifest exactly as shipped: check, run in the container as the
#    agent's own process would be (same config, args replaced by check).
run_check() { # summary-file: check --json in a container of the bundle's config
	jq '.process.args = [.process.args[0], "--config", "/etc/causeway/causeway.yaml", "check", "--json"]' \
		"$T/bundle/config.json" >"$T/c.json" && cp "$T/c.json" "$T/bundle/config.json"
	runc run -b "$T/bundle" $ID-c 2>"$T/check.err"
}
derive "$MANIFEST" "$T/exact.json"
run_check >"$T/check-exact.json"
jq -e .checks "$T/check-exact.json" >/dev/null || fail "check in the container printed no JSON: $(cat "$T/check.err")"
echo "as shipped: $(jq -r .toolkit "$T/exact.json"); caps $(jq -r '.capabilities | join(",")' "$T/exact.json")"
jq -r '.not_emulated[] | "  not emulated: " + .' "$T/exact.json"
echo "  xid faults: $(xid_item "$T/check-exact.json")"
is "$T/check-exact.json" "gpu telemetry" ok ||
	fail "NVML in the container as shipped: $(nvml_item "$T/check-exact.json" | jq -r .detail) (toolkit emulation: $(jq -r .toolkit "$T/exact.json"))"
x=$(xid_item "$T/check-exact.json")
is "$T/check-exact.json" "xid faults" warn "refused by the device cgroup" ||
	fail "as shipped (unprivileged, no device grant) /dev/kmsg should be refused by the device cgroup alone (docs/deploy.md, \"Kernel log\"); check says: $(echo "$x" | jq -r '.detail + "; fix: " + (.recommendation // "none")')"

# 2. The chart with kmsg.privileged=true (the chart's documented switch).
derive "helm:$CW_ROOT/deploy/helm/causeway:kmsg.privileged=true" "$T/priv.json"
run_check >"$T/check-priv.json"
is "$T/check-priv.json" "xid faults" ok ||
	fail "kmsg.privileged=true: no Xid source: $(xid_item "$T/check-priv.json") $(cat "$T/check.err")"

# 3. The agent in the documented configuration: the manifest plus a device
#    plugin's grant of the CharDevice it mounts.
derive "$MANIFEST" "$T/ds.json" --grant-devices
jq -e '.granted_devices == ["/dev/kmsg"]' "$T/ds.json" >/dev/null ||
	fail "the manifest mounts no CharDevice /dev/kmsg volume: granted $(jq -c .granted_devices "$T/ds.json"), mounts $(jq -c .mounts "$T/ds.json")"
cp "$T/bundle/config.json" "$T/agent-config.json"
runc run -d -b "$T/bundle" $ID >"$T/agent.out" 2>&1 || fail "runc run: $(cat "$T/agent.out")"
APID=$(runc state $ID | jq -r .pid)
echo "agent: $(jq -r '.args | join(" ")' "$T/ds.json") (pid $APID)"
runc exec $ID causeway --config /etc/causeway/causeway.yaml check --json >"$T/check.json" 2>"$T/check.err"
x=$(xid_item "$T/check.json")
n=$(nvml_item "$T/check.json")
echo "  check: $n"
echo "  check: $x"
is "$T/check.json" "gpu telemetry" ok "1 device" ||
	fail "check in the agent's container: NVML not available: $(echo "$n" | jq -r .detail) (toolkit emulation: $(jq -r .toolkit "$T/ds.json"))"
is "$T/check.json" "xid faults" ok ||
	fail "check in the agent's container: no Xid source: $(echo "$x" | jq -r '.detail + "; fix: " + (.recommendation // "none")') (capabilities $(jq -c .capabilities "$T/ds.json"), mounts $(jq -c .mounts "$T/ds.json"))"

# Scrape as the ServiceMonitor does: its path and serverName, over mutual
# TLS with a client certificate of the clients' CA, from the pod network.
port=$(jq -r '.serve' "$T/ds.json" | sed 's/.*://')
path=$(jq -r .metrics_path "$T/ds.json")
sname=$(jq -r .server_name "$T/ds.json")
nsenter -t "$APID" -n ip link set lo up 2>/dev/null # the CNI's part: the pod's loopback
scrape() { # extra curl args...: /metrics into $T/m
	nsenter -t "$APID" -n curl -sSf --max-time 10 --cacert "$P/ca.crt" --resolve "$sname:$port:127.0.0.1" \
		"$@" "https://$sname:$port$path" >"$T/m" 2>"$T/curl.err"
}
up=
for _ in $(seq 1 100); do
	scrape --cert "$P/prometheus.crt" --key "$P/prometheus.key" && { up=1; break; }
	runc state $ID 2>/dev/null | jq -e '.status == "running"' >/dev/null || break
	sleep 0.2
done
[ -n "$up" ] || fail "no /metrics from the agent: $(cat "$T/curl.err"); agent: $(runc state $ID 2>&1 | jq -r .status) $(tail -5 "$T/agent.out")"
scrape && fail "/metrics answered a scrape without a client certificate"
readiness=$(jq -r '.readiness | @sh' "$T/ds.json")
eval "runc exec $ID $readiness" >/dev/null 2>"$T/probe.err" || fail "the readiness probe's command failed in the container: $(cat "$T/probe.err")"

# A CUDA process of another pod: on the host, outside the container (the
# fake libcudart; named for this test, other tests' workloads share the
# host). hostPID lets the agent see it and its libraries through
# /proc/PID/root; its calls must reach /metrics.
WL=cw-ds-$$
cp "$CW_BUILD/fixtures/fake_workload" "$T/$WL"
LD_LIBRARY_PATH=$CW_BUILD/fixtures/fakecuda "$T/$WL" -T 6 -m sync >/dev/null 2>&1 &
WPID=$!

# An Xid in the real kernel log, for the fake's device 0 (PCI 0000:3b:00).
# The agent opened /dev/kmsg at its end: only lines from now on count.
echo "NVRM: Xid (PCI:0000:3b:00): 79, pid=$$, name=cw-ds-$$, GPU has fallen off the bus." >/dev/kmsg ||
	fail "cannot write to /dev/kmsg"
gpu="" xid="" calls=""
for _ in $(seq 1 60); do
	scrape --cert "$P/prometheus.crt" --key "$P/prometheus.key" || fail "scrape: $(cat "$T/curl.err"); agent: $(runc state $ID 2>&1 | jq -r .status) $(tail -5 "$T/agent.out")"
	gpu=$(grep -E "^causeway_gpu_temperature_celsius\{[^}]*node=\"$NODE\"" "$T/m" | head -1)
	xid=$(grep -E "^causeway_gpu_xid_errors_total\{[^}]*code=\"79\"" "$T/m" | grep "node=\"$NODE\"" | head -1)
	calls=$(grep -E "^causeway_op_duration_seconds_count\{[^}]*process=\"$WL\"" "$T/m" | grep "node=\"$NODE\"" | head -1)
	[ -n "$gpu" ] && [ -n "$xid" ] && [ -n "$calls" ] && break
	sleep 0.25
done
[ -n "$gpu" ] || fail "/metrics has no GPU sample of node $NODE from the fake NVML: $(grep -c '^causeway_gpu' "$T/m") causeway_gpu lines"
[ -n "$xid" ] || fail "/metrics has no Xid 79 of node $NODE: $(grep '^causeway_gpu_xid' "$T/m" | head -3 | tr '\n' ' '); counters: $(grep -o 'trace\.gpu\.\(xid\|kmsg\)[a-z_]*"} [0-9]*' "$T/m" | tr '\n' ' ')"
[ -n "$calls" ] || fail "/metrics has no CUDA calls of the host's process $WL (pid $WPID): hostPID $(jq .hostPID "$T/ds.json"); $(grep -c '^causeway_op_duration_seconds_count' "$T/m") op series"
mem=$(grep -E "^causeway_gpu_memory_total_bytes\{[^}]*gpu=\"0\"" "$T/m" | awk '{ print $2 }')
[ "$(printf '%.0f' "${mem:-0}")" = $((80 << 30)) ] || fail "GPU 0's memory total is ${mem:-absent}, the fake reports 80 GiB"
echo "  $gpu"
echo "  $xid"
echo "  $calls"
kill $WPID 2>/dev/null
runc kill $ID TERM 2>/dev/null
for _ in $(seq 1 50); do
	runc state $ID 2>/dev/null | jq -e '.status == "stopped"' >/dev/null && break
	sleep 0.1
done
[ -s "$T/state/causeway.db" ] || fail "no store on the node's /var/lib/causeway"
echo "ok: the agent under runc with the DaemonSet's exact container reports NVML and Xid, and both reach /metrics"
