#!/bin/sh
# The fast loop (make check-fast): a parallel build, the unit tests and the
# integration suite run JOBS at a time (pytest-xdist; one test file per
# worker, so a file's daemon fixtures stay in one process).  The
# sanitizer, valgrind, unprivileged, kit, fuzz and lint steps are left to
# `make check` (docs/testing.md).
set -eu
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
start=$(date +%s)
make --no-print-directory -j"$jobs" all
# The unit tests run beside everything below (their verdict is printed
# and counted at the end): the cores have room while the integration
# workers wait.
scripts/run-unit.sh build "$jobs" >build/unit-fast.log 2>&1 &
unit=$!
# The fault-point build the durable-run tests use (docs/testing.md), made
# here once, before the integration tests: two workers building it at
# once would run a binary the other is still writing.
mkdir -p build-test
if ! make --no-print-directory -j"$jobs" BUILD=build-test AL_TEST_BUILD=1 \
	build-test/airlock build-test/libairlock-net.so >build-test/make.log 2>&1; then
	cat build-test/make.log >&2
	wait "$unit" || true
	exit 1
fi
export AIRLOCK_FAULT_BIN="$PWD/build-test/airlock"
if ! /usr/bin/python3 -c 'import xdist' 2>/dev/null; then
	echo "check-fast: pytest-xdist is missing; scripts/install-deps.sh installs it" >&2
	wait "$unit" || true
	exit 1
fi
# The conformance kit against the third-party runtimes (runsc, dockerd)
# is left to `make check`: its time is the runtimes' own, and the rest of
# those files still drives each runtime (docs/testing.md).  So are the
# suites that spend their time in a service of their own: the fleet's
# PostgreSQL and SQLite nodes, dockerd, the image builds and the
# container runtimes' hostile programs, the compilers of the compiled
# languages, and the two descriptor stress tests (thousands of requests
# each): 40 % of the loop's test time.
# One worker more than cores: about half of a worker's time is spent
# waiting (daemons starting, runs sleeping, timeouts), so the cores stay
# busy (docs/testing.md).  PYTEST_JOBS overrides it.
integration=0
AIRLOCK_BIN=$PWD/build/airlock /usr/bin/python3 -m pytest -q \
	-n "${PYTEST_JOBS:-$((jobs + 1))}" \
	--dist loadfile \
	--deselect tests/integration/test_container_provider.py::test_conformance_kit \
	--deselect tests/integration/test_container_docker.py::test_conformance_kit \
	--deselect tests/integration/test_api_http_hardening.py::test_5000_requests_leave_no_descriptor_behind \
	--deselect tests/integration/test_api_http_hardening.py::test_1500_requests_under_a_1024_descriptor_limit \
	--ignore tests/integration/test_compiled_languages.py \
	--ignore tests/integration/test_fleet.py \
	--ignore tests/integration/test_fleet_sqlite.py \
	--ignore tests/integration/test_container_docker.py \
	--ignore tests/integration/test_container_images.py \
	--ignore tests/integration/test_container_hostile.py \
	tests/integration || integration=$?
units=0
wait "$unit" || units=$?
cat build/unit-fast.log
if [ "$units" -ne 0 ] || [ "$integration" -ne 0 ]; then
	echo "check-fast: red (unit $units, integration $integration)" >&2
	exit 1
fi
echo "check-fast: green in $(($(date +%s) - start)) s"
