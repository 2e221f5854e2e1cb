# Helpers for the tenant tests: real cgroup v2 directories named as each
# runtime names them, unique per run, removed on exit (source, then call
# tenant_cleanup from the EXIT trap).
V2=/sys/fs/cgroup/unified
[ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && V2=/sys/fs/cgroup
TENANT_DIRS=()

# A random lower-case hex string of $1 characters.
hexid() { head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c "$1"; }

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
