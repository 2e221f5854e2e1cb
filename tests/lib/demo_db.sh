# shellcheck shell=bash
# demo_db SCENARIO DEST: writes a demo database of SCENARIO, made by
# $CW_BIN, to DEST (a fresh copy the caller may change).
#
# Several golden tests read every demo scenario; generating all of them
# in each test (and again under the sanitizer build) was a large share of
# the suite's time. Each scenario is made once per binary, keyed by the
# binary's content, under $CW_BUILD/demo-cache, and copied from there.
# Generation itself stays tested by test_demo_scenarios and
# test_demo_determinism, which call `demo` directly.
demo_db() {
	local s=$1 dest=$2 bin=${CW_BIN:?}
	if [ -z "${CW_BUILD:-}" ]; then
		"$bin" demo "$s" --db "$dest" >/dev/null
		return
	fi
	if [ -z "${_cw_demo_key:-}" ] || [ "${_cw_demo_bin:-}" != "$bin" ]; then
		_cw_demo_key=$(sha256sum "$bin" | cut -c1-16) || return 1
		_cw_demo_bin=$bin
	fi
	local dir="$CW_BUILD/demo-cache/$_cw_demo_key"
	mkdir -p "$dir" || return 1
	if [ ! -f "$dir/$s.db" ]; then
		(
			flock 9
			[ -f "$dir/$s.db" ] && exit 0
			rm -f "$dir/$s.db.tmp"
			"$bin" demo "$s" --db "$dir/$s.db.tmp" >/dev/null || exit 1
			mv "$dir/$s.db.tmp" "$dir/$s.db"
		) 9>"$dir/$s.lock" || return 1
	fi
	rm -f "$dest"
	cp "$dir/$s.db" "$dest"
}
