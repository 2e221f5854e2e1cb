# Helpers for the tenant tests: real cgroup v2 directories named as each
# runtime names them, unique per run, removed on exit (source, then call
# tenant_cleanup from the EXIT trap).
V2=/sys/fs/cgroup/unified
[ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && V2=/sys/fs/cgroup
TENANT_DIRS=()

# A random lower-case hex string of $1 characters.
hexid() { head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c "$1"; }

# A random pod UID as the kubelet writes it (UUID v4 form).
pod_uid() { echo "$(hexid 8)-$(hexid 4)-4$(hexid 3)-8$(hexid 3)-$(hexid 12)"; }

# The start of a tenant test that traces the CUDA fixtures in real v2
# cgroups: root, the fixtures and a v2 hierarchy (skip 77 without root or
# v2), a temporary directory $D, background $pids killed and the cgroups
# removed on exit, and fail().
tenant_test_start() {
	[ "$(id -u)" = 0 ] || { echo "needs root for BPF and cgroups"; exit 77; }
	FIX=$CW_BUILD/fixtures
	[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] ||
		{ echo "missing fixtures (make fixtures)"; exit 1; }
	[ -f "$V2/cgroup.procs" ] || { echo "no cgroup v2 hierarchy"; exit 77; }
	D=$(mktemp -d)
	pids=()
	trap cleanup EXIT
}
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; tenant_cleanup; rm -rf "$D"; }
fail() { echo "FAIL: $*"; exit 1; }

# mkcg PATH: creates every missing level, remembering what it created.
mkcg() {
	local p="" part
	IFS=/ read -ra parts <<<"${1#/}"
	for part in "${parts[@]}"; do
		p="$p/$part"
		if [ ! -d "$V2$p" ]; then
			mkdir "$V2$p" || return 1
			TENANT_DIRS+=("$V2$p")
		fi
	done
}

# Removes the created directories, deepest first (a directory still in use
# by a real runtime was never ours to remove: rmdir fails and leaves it).
tenant_cleanup() {
	local i d
	for ((i = ${#TENANT_DIRS[@]} - 1; i >= 0; i--)); do
		d=${TENANT_DIRS[$i]}
		[ -f "$d/cgroup.procs" ] && while read -r p; do kill -9 "$p" 2>/dev/null; done <"$d/cgroup.procs"
	done
	sleep 0.2
	for ((i = ${#TENANT_DIRS[@]} - 1; i >= 0; i--)); do rmdir "${TENANT_DIRS[$i]}" 2>/dev/null; done
}

cgid() { stat -c %i "$V2$1"; }

# in_cg PATH CMD...: runs CMD inside the cgroup from its first instruction.
in_cg() {
	local cg=$1; shift
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' in_cg "$V2$cg" "$@"
}
