#!/bin/bash
# sid_python.sh VERSION ARGS...: runs Debian sid's own python3.VERSION (from
# the root filesystem tests/lib/debian_root.sh builds and caches) as this
# process (same pid: unshare without --fork, then exec), chroot'ed into an
# overlay of that root (the cache stays untouched) with this checkout
# bind-mounted at its own absolute path, in a private mount namespace, so
# benchmarks written for a host interpreter run it unchanged, through a
# one-line wrapper (they take the interpreter as one path):
#   printf '#!/bin/sh\nexec %s/bench/sid_python.sh 3.14 "$@"\n' "$PWD" >/tmp/py314
#   chmod +x /tmp/py314; PY=/tmp/py314 bash bench/py_capture_overhead.sh build
#   build/bench/pyresolve_bench /tmp/py314
set -eu
v=$1
shift
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/lib/debian_root.sh"
root=$(debian_root sid amd64 python3.14 python3.15)
ovl=/run/causeway-sidpy   # a mountpoint only: the tmpfs is private to the namespace
mkdir -p "$ovl"
exec unshare --mount --propagation private bash -c '
	root=$1 here=$2 v=$3 cwd=$4 o=$5; shift 5
	mount -t tmpfs cwbench "$o" && mkdir "$o/up" "$o/work" "$o/root" &&
		mount -t overlay overlay -o "lowerdir=$root,upperdir=$o/up,workdir=$o/work" "$o/root" &&
		mkdir -p "$o/root$here" && mount --bind "$here" "$o/root$here" || exit 1
	exec chroot "$o/root" bash -c "cd \"\$0\" && exec python$v \"\$@\"" "$cwd" "$@"' \
	sidpy "$root" "$here" "$v" "$PWD" "$ovl" "$@"
