#!/bin/sh
# Runs every libFuzzer target in BUILD/fuzz for SECONDS each, starting
# from its seed corpus tests/fuzz/corpus/<name>/ (docs/testing.md,
# "Fuzzing").  With "keep", what a run finds is kept in BUILD/corpus/<name>
# for the next run (make fuzz); otherwise it goes to a temp directory
# (make check).  A crash, a sanitizer report, a leak or a timeout fails the
# script; the input that caused it is saved in BUILD/crashes/.
set -u
build=${1:?usage: fuzz.sh BUILD SECONDS [keep]}
seconds=${2:?usage: fuzz.sh BUILD SECONDS [keep]}
keep=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$build/crashes"
failed=0
passed=0
for bin in "$build"/fuzz/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin" | sed 's/^fuzz_//')
	seeds="$here/tests/fuzz/corpus/$name"
	if [ "$keep" = keep ]; then
		work="$build/corpus/$name"
	else
		work="$tmp/$name"
	fi
	mkdir -p "$work"
	dict=""
	case $name in
	request | config | manifest | inbox) dict="-dict=$here/tests/fuzz/json.dict" ;;
	api) dict="-dict=$here/tests/fuzz/http.dict" ;;
	esac
	log="$build/fuzz-$name.log"
	# -timeout: one input taking longer is a hang; -rss_limit_mb: memory
	# that grows without bound is a finding too.
	# shellcheck disable=SC2086
	"$bin" $dict -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$build/crashes/$name-" \
		"$work" "$seeds" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -E '^#[0-9]+.*(DONE|INITED)' "$log" | tail -n 1 |
		sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		echo "  PASS  fuzz_$name: ${runs:-?} inputs in ${seconds}s, coverage ${cov:-?} edges"
	else
		failed=$((failed + 1))
		echo "  FAIL  fuzz_$name (exit $rc); log $log"
		grep -E 'ERROR|SUMMARY|Test unit written|runtime error' "$log" | head -n 20
	fi
done
echo "fuzz: $passed passed, $failed failed (${seconds}s each)"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
