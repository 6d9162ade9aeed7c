#!/bin/sh
# The integration suite and the conformance kit once more, against the
# ASan+UBSan build of the daemon and CLI (docs/testing.md, "Sanitizers
# beyond unit tests").  Every process of that build — the CLI, airlockd,
# its supervisors, the sandbox's init before it executes the program —
# writes its sanitizer reports to one directory (log_path), so a report
# fails this step even when a test only looks at exit codes.  Leaks are
# detected (LeakSanitizer) at each process's exit; the first error stops
# the process (halt_on_error).
#
# usage: integration-san.sh SAN-BUILD-DIR SAN-FAULT-BUILD-DIR
#   SAN_PYTEST_ARGS: extra pytest arguments (e.g. -k to narrow a rerun)
#   SAN_SERIAL_FILES: test files (names in tests/integration) left out of
#     that run and run after it on their own, without SAN_PYTEST_ARGS
#     (make check: the container runtimes' files, next to no other
#     worker; docs/testing.md)
# A test marked @pytest.mark.not_under_san("why") is skipped here, and
# pytest -rs prints why (tests/integration/conftest.py).
set -u
san=${1:?usage: integration-san.sh SAN-BUILD FAULT-BUILD}
fault=${2:?usage: integration-san.sh SAN-BUILD FAULT-BUILD}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$san" && pwd)/airlock
fault_bin=$(cd "$fault" && pwd)/airlock
for b in "$bin" "$fault_bin"; do
	if ! ldd "$b" | grep -q libasan; then
		echo "integration-san: $b is not an ASan build" >&2
		exit 1
	fi
done
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
export LSAN_OPTIONS="log_path=$logs/lsan"

status=0
echo "integration-san: pytest tests/integration against $bin"
ignore=
serial=
for f in ${SAN_SERIAL_FILES:-}; do
	ignore="$ignore --ignore=$here/tests/integration/$f"
	serial="$serial $here/tests/integration/$f"
done
# shellcheck disable=SC2086
AIRLOCK_SAN=1 AIRLOCK_BIN="$bin" AIRLOCK_FAULT_BIN="$fault_bin" \
	/usr/bin/python3 -m pytest -q -rs -p no:cacheprovider \
	${SAN_PYTEST_ARGS:-} $ignore "$here/tests/integration" || status=1
if [ -n "$serial" ]; then
	echo "integration-san: $SAN_SERIAL_FILES on their own"
	# shellcheck disable=SC2086
	AIRLOCK_SAN=1 AIRLOCK_BIN="$bin" AIRLOCK_FAULT_BIN="$fault_bin" \
		/usr/bin/python3 -m pytest -q -rs -p no:cacheprovider \
		$serial || status=1
fi
echo "integration-san: the conformance kit against $bin"
"$here/scripts/contract-all.sh" "$bin" "$(cd "$san" && pwd)/example-provider-kit" || status=1

reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
	status=1
	for r in $reports; do
		echo "integration-san: sanitizer report $(basename "$r"):"
		head -n 60 "$r"
	done
fi
echo "integration-san: $(echo "$reports" | grep -c . ) sanitizer reports"
exit $status
