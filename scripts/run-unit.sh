#!/bin/sh
# Runs every cmocka unit test binary in BUILD/tests; fails if any fails.
# JOBS (second argument, default 1) runs that many at once (make
# check-fast); each test writes its own log, so they do not interfere.
set -u
build=${1:-build}
jobs=${2:-1}
if [ "$build" = "--one" ]; then
	t=$2
	name=$(basename "$t")
	if "$t" >"$t.log" 2>&1; then
		echo "  PASS  $name ($(grep -c '^\[       OK \]' "$t.log") cases)"
		exit 0
	fi
	echo "  FAIL  $name"
	# cmocka's own verdicts first: a sanitizer's leak report after a
	# failed assertion would push them out of the tail.
	grep -E '^\[ +(FAILED|ERROR) +\]|error: |Failure!' "$t.log" | head -n 20
	tail -n 40 "$t.log"
	exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in "$build"/tests/test_*; do
	case "$t" in *.log) continue ;; esac
	[ -x "$t" ] && printf '%s\n' "$t"
done | xargs -P "$jobs" -n 1 "$0" --one >"$out"
cat "$out"
passed=$(grep -c '^  PASS' "$out")
failed=$(grep -c '^  FAIL' "$out")
echo "unit ($build): $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
