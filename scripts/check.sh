#!/bin/sh
# make check: every stage of docs/testing.md in order, the first failure
# stops it.  Builds and the unit, valgrind and integration stages use
# JOBS cores (default: all); pytest gets one worker more, as in
# scripts/check-fast.sh.  Each stage prints how long it took, and the
# end a table of them, so a slow CI run says where its time went.
set -u
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
workers=${PYTEST_JOBS:-$((jobs + 1))}
times=$(mktemp)
trap 'rm -f "$times"' EXIT
start=$(date +%s)

stage() {
	name=$1
	shift
	t0=$(date +%s)
	echo "check: $name"
	if ! "$@"; then
		echo "check: $name failed after $(($(date +%s) - t0)) s" >&2
		cat "$times"
		exit 1
	fi
	printf '  %-24s %5d s\n' "$name" "$(($(date +%s) - t0))" >>"$times"
}

m() { make --no-print-directory -j"$jobs" "$@"; }
# pytest-xdist, one test file per worker (a file's daemon fixtures stay
# in one process); LONG_FILES in tests/integration/conftest.py starts
# the longest files first.
xdist="-n $workers --dist loadfile"
# The container runtimes' files run after the others, one at a time:
# gVisor on its ptrace platform is several times slower than the
# sandbox, and next to the other workers its runs missed the 1 s wall
# limits and the kit's deadlines that the tests hold them to.
serial=$(cd tests/integration && ls test_container_*.py)
ignore=$(for f in $serial; do printf -- '--ignore=tests/integration/%s ' "$f"; done)
serial_paths=$(for f in $serial; do printf 'tests/integration/%s ' "$f"; done)

stage build m all
stage unit scripts/run-unit.sh build "$jobs"
stage build-san m SAN=1 all
stage unit-san scripts/run-unit.sh build-san "$jobs"
stage valgrind scripts/run-valgrind.sh build "$jobs"
# The fault-point builds the durable-run tests use, made before the
# workers start so no two build one at once.
stage build-test m BUILD=build-test AL_TEST_BUILD=1 \
	build-test/airlock build-test/libairlock-net.so
# shellcheck disable=SC2086 # word lists
stage integration env AIRLOCK_BIN="$PWD/build/airlock" \
	AIRLOCK_FAULT_BIN="$PWD/build-test/airlock" \
	/usr/bin/python3 -m pytest -q -p no:cacheprovider $xdist $ignore tests/integration
# shellcheck disable=SC2086
stage integration-containers env AIRLOCK_BIN="$PWD/build/airlock" \
	AIRLOCK_FAULT_BIN="$PWD/build-test/airlock" \
	/usr/bin/python3 -m pytest -q -p no:cacheprovider $serial_paths
stage integration-unprivileged scripts/run-unprivileged.sh "$PWD/build/airlock"
stage contract scripts/contract-all.sh "$PWD/build/airlock" "$PWD/build/example-provider-kit"
stage build-san-test m SAN=1 BUILD=build-san-test AL_TEST_BUILD=1 \
	build-san-test/airlock build-san-test/libairlock-net.so
stage integration-san env SAN_PYTEST_ARGS="$xdist" \
	SAN_SERIAL_FILES="$serial" \
	scripts/integration-san.sh build-san build-san-test
stage fuzz-check m fuzz-check
stage lint scripts/lint.sh

cat "$times"
echo "check: green in $(($(date +%s) - start)) s"
