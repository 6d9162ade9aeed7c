#!/bin/sh
# Runs the unit tests under valgrind (leaks and memory errors are
# failures).  Tests that start limited processes are left to the ASan+UBSan
# run: valgrind refuses a child's setrlimit(RLIMIT_NOFILE) and does not
# know namespaces, so they cannot run under it (docs/testing.md).
set -u
build=${1:-build}
failed=0
passed=0
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	case "$name" in
	*.log) continue ;;
	test_local_provider | test_sandbox_* | test_kit_* | test_host_e2e*)
		echo "  SKIP  $name (starts limited processes; covered by ASan+UBSan)"
		continue ;;
	esac
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
echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
