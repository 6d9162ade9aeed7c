#!/bin/sh
# Runs the unit tests under valgrind (leaks and memory errors are
# failures).  The tests valgrind cannot run are named, with why, in
# tests/unit/valgrind-skip.txt; every other test runs.  A test source with
# no binary, or a listed name with no test, fails the script, so a new
# test is never left out silently (docs/testing.md).  JOBS (second
# argument, default 1) runs that many at once; each writes its own log.
set -u
build=${1:-build}
jobs=${2:-1}
if [ "$build" = "--one" ]; then
	t=$2
	name=$(basename "$t")
	if valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
		--child-silent-after-fork=yes "$t" >"$t.vg.log" 2>&1; then
		echo "  PASS  $name (valgrind)"
		exit 0
	fi
	echo "  FAIL  $name (valgrind)"
	grep -v '^--' "$t.vg.log" | tail -n 40
	exit 1
fi
skipfile=$(dirname "$0")/../tests/unit/valgrind-skip.txt
out=$(mktemp)
trap 'rm -f "$out"' EXIT
listed() { grep -v '^#' "$skipfile" | awk -v n="$1" '$1 == n { $1 = ""; print substr($0, 2); f = 1 } END { exit !f }'; }
for src in "$(dirname "$0")"/../tests/unit/test_*.c; do
	name=$(basename "$src" .c)
	t="$build/tests/$name"
	if why=$(listed "$name"); then
		echo "  SKIP  $name ($why)" >>"$out"
		continue
	fi
	if [ ! -x "$t" ]; then
		echo "  FAIL  $name (not built: neither run nor in valgrind-skip.txt)" >>"$out"
		continue
	fi
	printf '%s\n' "$t"
done | xargs -P "$jobs" -n 1 "$0" --one >>"$out"
for name in $(grep -v '^#' "$skipfile" | awk 'NF { print $1 }'); do
	if [ ! -e "$(dirname "$0")/../tests/unit/$name.c" ]; then
		echo "  FAIL  $name is in valgrind-skip.txt but has no test" >>"$out"
	fi
done
cat "$out"
passed=$(grep -c '^  PASS' "$out")
skipped=$(grep -c '^  SKIP' "$out")
failed=$(grep -c '^  FAIL' "$out")
echo "valgrind: $passed passed, $skipped skipped (listed), $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
