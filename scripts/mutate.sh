#!/bin/bash
# mutate.sh: a small mutation runner. Each mutation changes one line of the
# product; the module's tests must then fail ("caught"). A mutation that
# changes no test result marks a line no test guards.
#
#   scripts/mutate.sh [options] [MODULE | MODULE:N]...
#     (no MODULE: every scripts/mutations/*.list)
#   --list          print the mutations and exit
#   --check         parse every list and check each ORIGINAL occurs exactly
#                   once in its file; build and run nothing (the suite's check)
#   --timeout S     per-mutation test time limit (default 120 s; a mutant
#                   that runs past it counts as caught, marked "timeout")
#   --dir DIR       where the mutant tree and build live (default build-mutate)
#   -j N            make jobs (default 2)
#
# Lists: scripts/mutations/<module>.list (MUTATIONS_DIR overrides the
# folder). Lines starting with '#' are comments, except two directives:
#   # test: COMMAND    the shell command (run from the root of the mutant
#                      tree, $BUILD = the mutant build directory, also
#                      $CW_BIN, $CW_BUILD, $CW_ROOT) that must FAIL for a
#                      mutation to count as caught; exactly one per list
#   # build: TARGET... optional: make targets under $BUILD to rebuild
#                      (default: every $BUILD/PATH the test command names,
#                      else "all unit")
# Every other non-empty line is PATH<TAB>ORIGINAL<TAB>REPLACEMENT: ORIGINAL
# is an exact substring occurring exactly once in PATH (repository-relative);
# the mutation replaces it with REPLACEMENT (which may be empty). A line that
# breaks these rules is an error, never "caught".
#
# The worktree is never modified: mutations are applied to a copy of the
# tree (DIR/tree, kept between runs so that builds stay incremental) and
# each mutated file is restored, also on Ctrl-C. Results: one line per
# mutation (caught / MISSED / INVALID for a mutant that does not build),
# one line per module and a summary; exit 0 only when every mutation was
# caught.
set -u
shopt -u patsub_replacement 2>/dev/null || true

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LISTS=${MUTATIONS_DIR:-$ROOT/scripts/mutations}
TIMEOUT=120
DIR=$ROOT/build-mutate
JOBS=2
MODE=run
SEL=()

die() { echo "mutate: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--list) MODE=list ;;
	--check) MODE=check ;;
	--timeout) [ $# -ge 2 ] || die "--timeout needs a value"; TIMEOUT=$2; shift ;;
	--dir) [ $# -ge 2 ] || die "--dir needs a value"; DIR=$2; shift ;;
	-j) [ $# -ge 2 ] || die "-j needs a value"; JOBS=$2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option \"$1\"" ;;
	*) SEL+=("$1") ;;
	esac
	shift
done
case $TIMEOUT in '' | *[!0-9]*) die "--timeout must be a number of seconds" ;; esac
case $JOBS in '' | *[!0-9]*) die "-j must be a number" ;; esac

# --- parsing -------------------------------------------------------------
# parse_list FILE: fills M_PATH/M_ORIG/M_REPL/M_LINE (one entry per
# mutation), L_TEST and L_BUILD; returns nonzero after printing every
# problem (file:line: why).
parse_list() {
	local f=$1 n=0 line rest path orig repl bad=0 content tmp count
	M_PATH=() M_ORIG=() M_REPL=() M_LINE=() L_TEST='' L_BUILD=''
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case $line in
		'# test:'*)
			if [ -n "$L_TEST" ]; then
				echo "$f:$n: a second \"# test:\" line" >&2; bad=1
			fi
			L_TEST=${line#'# test:'}; L_TEST=${L_TEST# }
			continue ;;
		'# build:'*) L_BUILD=${line#'# build:'}; continue ;;
		'#'* | '') continue ;;
		esac
		if [[ $line =~ ^[[:space:]]*$ ]]; then continue; fi
		rest=$line
		path=${rest%%$'\t'*}
		if [ "$path" = "$rest" ]; then
			echo "$f:$n: not PATH<TAB>ORIGINAL<TAB>REPLACEMENT" >&2; bad=1; continue
		fi
		rest=${rest#*$'\t'}
		orig=${rest%%$'\t'*}
		if [ "$orig" = "$rest" ]; then
			echo "$f:$n: not PATH<TAB>ORIGINAL<TAB>REPLACEMENT (one tab)" >&2; bad=1; continue
		fi
		repl=${rest#*$'\t'}
		case $repl in *$'\t'*)
			echo "$f:$n: more than three tab-separated fields" >&2; bad=1; continue ;;
		esac
		if [ -z "$orig" ]; then
			echo "$f:$n: empty ORIGINAL" >&2; bad=1; continue
		fi
		if [ "$orig" = "$repl" ]; then
			echo "$f:$n: REPLACEMENT equals ORIGINAL" >&2; bad=1; continue
		fi
		case $path in /* | *..*)
			echo "$f:$n: PATH \"$path\" must be relative to the repository" >&2; bad=1; continue ;;
		esac
		if [ ! -f "$ROOT/$path" ]; then
			echo "$f:$n: no file \"$path\"" >&2; bad=1; continue
		fi
		content=$(cat -- "$ROOT/$path")
		tmp=${content//"$orig"/}
		count=$(((${#content} - ${#tmp}) / ${#orig}))
		if [ "$count" -ne 1 ]; then
			echo "$f:$n: ORIGINAL \"$orig\" occurs $count times in $path (must be exactly once)" >&2
			bad=1; continue
		fi
		M_PATH+=("$path") M_ORIG+=("$orig") M_REPL+=("$repl") M_LINE+=("$n")
	done <"$f"
	if [ -z "$L_TEST" ]; then
		echo "$f: no \"# test: COMMAND\" line" >&2; bad=1
	fi
	if [ ${#M_PATH[@]} -eq 0 ]; then
		echo "$f: no mutations" >&2; bad=1
	fi
	return $bad
}

# --- selection -----------------------------------------------------------
[ -d "$LISTS" ] || die "no folder \"$LISTS\""
declare -A ONLY=()
MODULES=()
if [ ${#SEL[@]} -eq 0 ]; then
	for f in "$LISTS"/*.list; do
		[ -f "$f" ] && MODULES+=("$(basename "$f" .list)")
	done
else
	for s in "${SEL[@]}"; do
		m=${s%%:*}
		[ -f "$LISTS/$m.list" ] || die "no mutation list \"$m\" (in $LISTS)"
		if [ "$m" != "$s" ]; then
			case ${s#*:} in '' | *[!0-9]*) die "\"$s\": expected MODULE:N" ;; esac
			ONLY[$m]="${ONLY[$m]:-} ${s#*:} "
		fi
		case " ${MODULES[*]:-} " in *" $m "*) ;; *) MODULES+=("$m") ;; esac
	done
fi
[ ${#MODULES[@]} -gt 0 ] || die "no mutation lists in \"$LISTS\""

if [ $MODE != run ]; then
	errors=0 total=0
	for m in "${MODULES[@]}"; do
		if ! parse_list "$LISTS/$m.list"; then
			errors=$((errors + 1)); continue
		fi
		total=$((total + ${#M_PATH[@]}))
		[ $MODE = list ] || continue
		echo "$m: ${#M_PATH[@]} mutations; test: $L_TEST"
		for i in "${!M_PATH[@]}"; do
			printf '  %s:%-3d %s: "%s" -> "%s"\n' "$m" $((i + 1)) "${M_PATH[$i]}" "${M_ORIG[$i]}" "${M_REPL[$i]}"
		done
	done
	echo "mutate: ${#MODULES[@]} lists, $total mutations, $errors lists with errors"
	[ $errors -eq 0 ]
	exit
fi

# --- the mutant tree -----------------------------------------------------
TREE=$DIR/tree
BUILD=$DIR/build
mkdir -p "$TREE" "$BUILD" || die "cannot create \"$DIR\""
TREE=$(cd "$TREE" && pwd)
BUILD=$(cd "$BUILD" && pwd)
case $TREE/ in "$ROOT"/src/* | "$ROOT"/tests/* | "$ROOT"/scripts/*) die "--dir must not be inside the sources" ;; esac

# Copies files that differ (content, not time) from the worktree into the
# tree. A copied file gets a new mtime, so make rebuilds what uses it; an
# unchanged file keeps its old one, so builds stay incremental.
sync_tree() {
	local f
	(cd "$ROOT" && git ls-files -co --exclude-standard -z 2>/dev/null) |
		while IFS= read -r -d '' f; do
			case $f in build*/* | node_modules/* | */node_modules/*) continue ;; esac
			[ -f "$ROOT/$f" ] || continue
			if ! cmp -s -- "$ROOT/$f" "$TREE/$f"; then
				mkdir -p -- "$TREE/$(dirname -- "$f")" && cp -- "$ROOT/$f" "$TREE/$f" || return 1
			fi
		done
}

CUR_FILE=''
restore() {
	if [ -n "$CUR_FILE" ]; then
		# A fresh mtime (newer than the mutant's object) makes the next
		# build recompile the restored file.
		cp -- "$ROOT/$CUR_FILE" "$TREE/$CUR_FILE"
		touch -- "$TREE/$CUR_FILE"
		CUR_FILE=''
	fi
}
trap 'restore; echo "mutate: interrupted" >&2; exit 130' INT TERM HUP
trap restore EXIT

# apply PATH ORIGINAL REPLACEMENT: writes the mutated file into the tree.
apply() {
	local content
	content=$(cat -- "$ROOT/$1"; echo x)
	content=${content%x}
	CUR_FILE=$1
	printf '%s' "${content/"$2"/"$3"}" >"$TREE/$1.mut" && mv -- "$TREE/$1.mut" "$TREE/$1"
}

# targets: the make targets of a list, as absolute paths under $BUILD.
targets() {
	local t out=()
	if [ -n "$L_BUILD" ]; then
		for t in $L_BUILD; do out+=("$BUILD/${t#/}"); done
	else
		for t in $(grep -oE '\$\{?BUILD\}?/[A-Za-z0-9_./-]+' <<<"$L_TEST" | sed -E 's/^\$\{?BUILD\}?\///'); do
			out+=("$BUILD/$t")
		done
	fi
	[ ${#out[@]} -gt 0 ] || out=(all unit)
	printf '%s\n' "${out[@]}"
}

build_targets() {
	local tg
	mapfile -t tg < <(targets)
	case " ${tg[*]} " in
	" all unit ") make --no-print-directory -s -C "$TREE" -j"$JOBS" BUILD="$BUILD" all unit ;;
	*) make --no-print-directory -s -C "$TREE" -j"$JOBS" BUILD="$BUILD" "${tg[@]}" ;;
	esac
}

run_test() {
	(cd "$TREE" && BUILD="$BUILD" CW_BUILD="$BUILD" CW_BIN="$BUILD/causeway" CW_ROOT="$TREE" \
		timeout -k 5 "$TIMEOUT" bash -c "$L_TEST")
}

LOG=$DIR/log
mkdir -p "$LOG"
start=$SECONDS
sync_tree || die "cannot copy the tree into \"$TREE\""
T_CAUGHT=0 T_MISSED=0 T_INVALID=0 T_ERR=0
REPORT=()
for m in "${MODULES[@]}"; do
	if ! parse_list "$LISTS/$m.list"; then
		echo "$m: ERROR: the list does not parse (see above); skipped"
		T_ERR=$((T_ERR + 1)); REPORT+=("$m: list error"); continue
	fi
	mstart=$SECONDS caught=0 missed=0 invalid=0
	echo "== $m: ${#M_PATH[@]} mutations; test: $L_TEST"
	# The unmutated tree must build and pass, or every mutation would
	# look caught.
	if ! build_targets >"$LOG/$m.base.log" 2>&1; then
		echo "$m: ERROR: the unmutated tree does not build (log: $LOG/$m.base.log)"
		T_ERR=$((T_ERR + 1)); REPORT+=("$m: base build failed"); continue
	fi
	if ! run_test >>"$LOG/$m.base.log" 2>&1; then
		echo "$m: ERROR: the test fails without any mutation (log: $LOG/$m.base.log)"
		T_ERR=$((T_ERR + 1)); REPORT+=("$m: base test failed"); continue
	fi
	for i in "${!M_PATH[@]}"; do
		id=$((i + 1))
		if [ -n "${ONLY[$m]:-}" ] && [[ ${ONLY[$m]} != *" $id "* ]]; then
			continue
		fi
		p=${M_PATH[$i]} o=${M_ORIG[$i]} r=${M_REPL[$i]}
		log=$LOG/$m.$id.log
		t0=$SECONDS
		apply "$p" "$o" "$r" || die "cannot write the mutant of \"$p\""
		if ! build_targets >"$log" 2>&1; then
			res=INVALID; invalid=$((invalid + 1))
		else
			run_test >>"$log" 2>&1
			rc=$?
			if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
				res="caught (timeout)"; caught=$((caught + 1))
			elif [ $rc -ne 0 ]; then
				res=caught; caught=$((caught + 1))
			else
				res=MISSED; missed=$((missed + 1))
			fi
		fi
		restore
		printf '  %-17s %s:%-3d %s: "%s" -> "%s" (%ss, log %s)\n' "$res" "$m" "$id" "$p" "$o" "$r" \
			$((SECONDS - t0)) "${log#"$ROOT"/}"
	done
	line="$m: $caught caught, $missed missed, $invalid invalid in $((SECONDS - mstart)) s"
	echo "$line"
	REPORT+=("$line")
	T_CAUGHT=$((T_CAUGHT + caught)) T_MISSED=$((T_MISSED + missed)) T_INVALID=$((T_INVALID + invalid))
done
# Leave the tree as the worktree is (a restored file kept its content).
echo
printf '%s\n' "${REPORT[@]}"
echo "mutate: $T_CAUGHT caught, $T_MISSED missed, $T_INVALID invalid, $T_ERR list errors in $((SECONDS - start)) s"
[ $T_MISSED -eq 0 ] && [ $T_INVALID -eq 0 ] && [ $T_ERR -eq 0 ]
