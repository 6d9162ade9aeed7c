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
scripts/run-unit.sh build "$jobs"
if ! /usr/bin/python3 -c 'import xdist' 2>/dev/null; then
	echo "check-fast: pytest-xdist is missing; scripts/install-deps.sh installs it" >&2
	exit 1
fi
AIRLOCK_BIN=$PWD/build/airlock /usr/bin/python3 -m pytest -q -n "$jobs" \
	--dist loadfile tests/integration
echo "check-fast: green in $(($(date +%s) - start)) s"
