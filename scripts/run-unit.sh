#!/bin/sh
# Runs every cmocka unit test binary in BUILD/tests; fails if any fails.
set -u
build=${1:-build}
failed=0
passed=0
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	if "$t" >"$build/tests/$name.log" 2>&1; then
		passed=$((passed + 1))
		echo "  PASS  $name ($(grep -c '^\[       OK \]' "$build/tests/$name.log") cases)"
	else
		failed=$((failed + 1))
		echo "  FAIL  $name"
		tail -n 40 "$build/tests/$name.log"
	fi
done
echo "unit ($build): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
