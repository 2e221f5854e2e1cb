#!/bin/bash
# The agent's OCI image (scripts/build-image.sh: a Debian 12 root plus the
# x86-64 release file, assembled without a registry) is a valid OCI layout
# that umoci unpacks, and runc runs it as the DaemonSet does (read-only
# root, the DaemonSet's capabilities that this host can grant, the store on
# a host directory): check says trace can run, demo writes the store, and
# explain reads it. The Dockerfile, the DaemonSet and the Helm chart point
# at the same layout: entrypoint, working directory, volume, config path,
# tag, and the probes' programs exist in the image.
set -u
: "${CW_ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
cd "$CW_ROOT" || exit 1
for t in umoci runc jq; do
	command -v $t >/dev/null || fail "$t is not installed (scripts/install-deps.sh, CW_TEST_DEPS=1)"
done
make -s --no-print-directory release-x86_64 >/dev/null || fail "make release-x86_64"
T=$(mktemp -d /tmp/cw-image.XXXXXX)
ID=cw-image-$$
trap 'runc delete -f $ID >/dev/null 2>&1; rm -rf "$T"' EXIT
VERSION=$(sed -n 's/^VERSION := //p' Makefile)
scripts/build-image.sh x86_64 "$T/img" || fail "build-image"

# The layout: every blob is named by its digest; the config says what runs.
for b in "$T"/img/blobs/sha256/*; do
	[ "$(sha256sum "$b" | cut -d' ' -f1)" = "$(basename "$b")" ] || fail "blob $(basename "$b") is not its digest"
done
man=$(jq -r '.manifests[0].digest' "$T/img/index.json" | sed 's/^sha256://')
[ "$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$T/img/index.json")" = "$VERSION" ] ||
	fail "index.json tag"
cfg=$(jq -r '.config.digest' "$T/img/blobs/sha256/$man" | sed 's/^sha256://')
C=$T/img/blobs/sha256/$cfg
[ "$(jq -r .architecture "$C")" = amd64 ] || fail "architecture $(jq -r .architecture "$C")"
entry=$(jq -r '.config.Entrypoint[0]' "$C")
workdir=$(jq -r '.config.WorkingDir' "$C")
volume=$(jq -r '.config.Volumes | keys[0]' "$C")

umoci unpack --image "$T/img:$VERSION" "$T/bundle" >/dev/null || fail "umoci unpack"
R=$T/bundle/rootfs
cmp -s "$R$entry" build/release/causeway-linux-x86_64 || fail "$entry in the image is not the release file"
[ -d "$R/etc/causeway" ] && [ -d "$R$volume" ] || fail "no /etc/causeway or $volume in the image"

# The DaemonSet's capabilities, less what this host's bounding set lacks.
ds=deploy/kubernetes/causeway.yaml
want=$(sed -n 's/^ *add: \[\(.*\)\]/\1/p' $ds | head -n 1 | tr -d '" ' | tr ',' '\n' | sed 's/^/CAP_/')
[ -n "$want" ] || fail "no capabilities in $ds"
bnd=$((16#$(awk '/^CapBnd/ { print $2 }' /proc/self/status)))
caps=()
for c in $want; do
	n=$(grep -E "^#define $c[[:space:]]" /usr/include/linux/capability.h | awk '{ print $3 }')
	[ -n "$n" ] || fail "unknown capability $c"
	if (((bnd >> n) & 1)); then caps+=("$c"); else echo "note: this host cannot grant $c"; fi
done
mkdir -p "$T/store"
# run ARGS...: runs the image's entrypoint with ARGS under runc.
run() {
	jq --argjson c "$(printf '%s\n' "${caps[@]}" | jq -R . | jq -sc .)" --arg e "$entry" --arg s "$T/store" \
		--arg v "$volume" --argjson a "$(printf '%s\n' "$@" | jq -R . | jq -sc .)" \
		'.process.terminal = false | .root.readonly = true | .process.args = [$e] + $a |
		.process.capabilities = {bounding: $c, effective: $c, permitted: $c} |
		.mounts = [.mounts[] | select(.destination != $v)] +
			[{destination: $v, type: "bind", source: $s, options: ["rbind", "rw"]}]' \
		<"$T/bundle/config.json" >"$T/bundle/config.json.new" && mv "$T/bundle/config.json.new" "$T/bundle/config.json"
	runc run -b "$T/bundle" $ID
}
out=$(run check 2>&1)
echo "$out" | grep -q 'trace can run here' || fail "check in the image: $out"
out=$(run demo --db demo.db 2>&1) || fail "demo in the image: $out"
[ -s "$T/store/demo.db" ] || fail "demo wrote nothing to the volume (working directory $workdir): $out"
out=$(run explain --db "$volume/demo.db" 2>&1) || fail "explain in the image: $out"
echo "$out" | grep -q 'causal chain' || fail "explain: $out"

# The deployment files use the same layout.
grep -q "^ENTRYPOINT \[\"$entry\"\]" deploy/Dockerfile || fail "Dockerfile ENTRYPOINT is not $entry"
grep -q "^WORKDIR $workdir\$" deploy/Dockerfile || fail "Dockerfile WORKDIR is not $workdir"
grep -q "^VOLUME \[\"$volume\"\]" deploy/Dockerfile || fail "Dockerfile VOLUME is not $volume"
grep -q "image: causeway:$VERSION\$" $ds || fail "$ds image is not causeway:$VERSION"
grep -q "^  tag: $VERSION\$" deploy/helm/causeway/values.yaml || fail "Helm image tag is not $VERSION"
for f in $ds deploy/helm/causeway/templates/daemonset.yaml; do
	grep -q ' /etc/causeway/causeway.yaml' "$f" || fail "$f does not read /etc/causeway/causeway.yaml"
	grep -q "path: $volume\|mountPath: $volume" "$f" || fail "$f does not mount $volume"
	for p in $(sed -n 's/.*command: \["\([^"]*\)".*/\1/p' "$f" | sort -u); do
		[ -x "$R/usr/bin/$p" ] || [ -x "$R/usr/local/bin/$p" ] || [ -x "$R$p" ] || fail "$f runs '$p', not in the image"
	done
done
echo "ok: image $VERSION runs check, demo and explain under runc"
