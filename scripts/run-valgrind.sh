#!/bin/sh
# Runs the unit tests under valgrind (leaks and memory errors are
# failures).  The tests valgrind cannot run are named, with why, in
# tests/unit/valgrind-skip.txt; every other test runs.  A test source with
# no binary, or a listed name with no test, fails the script, so a new
# test is never left out silently (docs/testing.md).
set -u
build=${1:-build}
skipfile=$(dirname "$0")/../tests/unit/valgrind-skip.txt
failed=0
passed=0
skipped=0
listed() { grep -v '^#' "$skipfile" | awk -v n="$1" '$1 == n { $1 = ""; print substr($0, 2); f = 1 } END { exit !f }'; }
for src in "$(dirname "$0")"/../tests/unit/test_*.c; do
	name=$(basename "$src" .c)
	t="$build/tests/$name"
	if why=$(listed "$name"); then
		skipped=$((skipped + 1))
		echo "  SKIP  $name ($why)"
		continue
	fi
	if [ ! -x "$t" ]; then
		failed=$((failed + 1))
		echo "  FAIL  $name (not built: neither run nor in valgrind-skip.txt)"
		continue
	fi
	if valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
		--child-silent-after-fork=yes "$t" >"$build/tests/$name.vg.log" 2>&1; then
		passed=$((passed + 1))
		echo "  PASS  $name (valgrind)"
	else
		failed=$((failed + 1))
		echo "  FAIL  $name (valgrind)"
		grep -v '^--' "$build/tests/$name.vg.log" | tail -n 40
	fi
done
for name in $(grep -v '^#' "$skipfile" | awk 'NF { print $1 }'); do
	if [ ! -e "$(dirname "$0")/../tests/unit/$name.c" ]; then
		failed=$((failed + 1))
		echo "  FAIL  $name is in valgrind-skip.txt but has no test"
	fi
done
echo "valgrind: $passed passed, $skipped skipped (listed), $failed failed"
[ "$failed" -eq 0 ]
