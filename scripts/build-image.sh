#!/bin/bash
# build-image.sh [ARCH] [OUT]: the agent's OCI image, without a registry or
# a container daemon: a minimal Debian 12 root filesystem (mmdebstrap, with
# curl and ca-certificates for the DaemonSet's probes) as the base layer and
# the release file (make release-ARCH) as the second, written as an OCI
# image layout (oci-layout, index.json, blobs/sha256) with tar, gzip,
# sha256sum and jq. ARCH is x86_64 (default) or aarch64; OUT defaults to
# build/image/causeway-ARCH. The layout (docs/install.md):
#   /usr/local/bin/causeway   the release file; the entrypoint, "check" the default command
#   /etc/causeway/            causeway.yaml and tls/ (a ConfigMap and a Secret in Kubernetes)
#   /var/lib/causeway/        the store (a hostPath volume); the working directory
# Push or load it with skopeo (oci:OUT:TAG), run it with umoci + runc.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=${1:-x86_64}
OUT=${2:-$ROOT/build/image/causeway-$ARCH}
case $ARCH in
x86_64) DEB=amd64 ;;
aarch64) DEB=arm64 ;;
*) echo "build-image: no architecture '$ARCH' (x86_64 or aarch64)" >&2; exit 2 ;;
esac
VERSION=$(sed -n 's/^VERSION := //p' "$ROOT/Makefile")
BIN=$ROOT/build/release/causeway-linux-$ARCH
[ -x "$BIN" ] || { echo "build-image: no $BIN (make release-$ARCH)" >&2; exit 1; }
for t in jq sha256sum gzip tar; do
	command -v $t >/dev/null || { echo "build-image: needs $t" >&2; exit 1; }
done
# shellcheck source=tests/lib/debian_root.sh
. "$ROOT/tests/lib/debian_root.sh"
base=$(debian_root bookworm "$DEB" curl ca-certificates) || { echo "build-image: no $DEB root" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cw-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT/blobs/sha256"
TAR=(tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix
	--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime)

# blob FILE MEDIATYPE: moves FILE into the layout, prints its descriptor.
blob() {
	local d s
	d=$(sha256sum "$1" | cut -d' ' -f1)
	s=$(stat -c %s "$1")
	mv "$1" "$OUT/blobs/sha256/$d"
	jq -cn --arg m "$2" --arg d "sha256:$d" --argjson s "$s" '{mediaType: $m, digest: $d, size: $s}'
}
# layer DIR: a gzip layer of DIR's tree; prints "DIFF_ID DESCRIPTOR".
layer() {
	local dir=$1 diff
	shift
	"${TAR[@]}" -C "$dir" "$@" -cf "$tmp/layer.tar" .
	diff=sha256:$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
	gzip -n -1 "$tmp/layer.tar"
	echo "$diff $(blob "$tmp/layer.tar.gz" application/vnd.oci.image.layer.v1.tar+gzip)"
}

# The base: the root as mmdebstrap left it, less what a runtime provides
# (/dev, /proc, /sys are mounted by runc) and the cache marker.
read -r diff1 desc1 < <(layer "$base" --exclude=./.causeway-root-ok --exclude='./dev/*' \
	--exclude='./proc/*' --exclude='./sys/*' --exclude='./var/cache/apt/*.bin')
mkdir -p "$tmp/app/usr/local/bin" "$tmp/app/etc/causeway" "$tmp/app/var/lib/causeway"
install -m 0755 "$BIN" "$tmp/app/usr/local/bin/causeway"
read -r diff2 desc2 < <(layer "$tmp/app")

jq -n --arg arch "$DEB" --arg d1 "$diff1" --arg d2 "$diff2" --arg v "$VERSION" '{
	architecture: $arch, os: "linux", created: "1970-01-01T00:00:00Z",
	config: {
		Entrypoint: ["/usr/local/bin/causeway"], Cmd: ["check"],
		Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
		WorkingDir: "/var/lib/causeway",
		Volumes: {"/var/lib/causeway": {}}, ExposedPorts: {"7070/tcp": {}},
		Labels: {"org.opencontainers.image.title": "causeway", "org.opencontainers.image.version": $v}
	},
	rootfs: {type: "layers", diff_ids: [$d1, $d2]},
	history: [{created_by: "mmdebstrap bookworm (curl, ca-certificates)"},
		  {created_by: "causeway release file (make release)"}]
}' >"$tmp/config.json"
cfg=$(blob "$tmp/config.json" application/vnd.oci.image.config.v1+json)
jq -n --argjson c "$cfg" --argjson l1 "$desc1" --argjson l2 "$desc2" \
	'{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config: $c, layers: [$l1, $l2]}' \
	>"$tmp/manifest.json"
man=$(blob "$tmp/manifest.json" application/vnd.oci.image.manifest.v1+json)
jq -n --argjson m "$man" --arg arch "$DEB" --arg v "$VERSION" '{schemaVersion: 2,
	manifests: [$m + {platform: {architecture: $arch, os: "linux"},
		annotations: {"org.opencontainers.image.ref.name": $v}}]}' >"$OUT/index.json"
echo '{"imageLayoutVersion": "1.0.0"}' >"$OUT/oci-layout"
echo "build-image: $OUT:$VERSION ($DEB, $(du -sh "$OUT" | cut -f1))" >&2
