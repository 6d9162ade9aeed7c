#!/bin/sh
# cppcheck and clang-tidy over our own C code; any finding fails.
set -eu
cd "$(dirname "$0")/.."
srcs=$(find src examples -name '*.c' | sort)
cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability \
	--inline-suppr -D_GNU_SOURCE -Iinclude -Isrc \
	--suppress=missingIncludeSystem $srcs
# The console's files as C (src/server/ui.c includes them; the build makes
# them under build/gen).
gen=$(mktemp -d)
scripts/embed-ui.sh "$gen/ui_assets.inc" $(find ui -type f | sort)
scripts/embed-sql.sh "$gen/store_migrations.inc" $(find src/store/migrations -maxdepth 1 -name '*.sql' | sort)
scripts/embed-sql.sh "$gen/store_sqlite_migrations.inc" $(find src/store/migrations/sqlite -name '*.sql' | sort)
cflags="-std=c17 -D_GNU_SOURCE -Iinclude -Isrc -I$gen $(pkg-config --cflags jansson libseccomp libcap sqlite3 nettle libcrypto libmicrohttpd libcurl libpq)"
# valist.Uninitialized: clang 14 misreads glibc's va_start (false positive).
checks='-*,clang-analyzer-*,-clang-analyzer-valist.Uninitialized,-clang-analyzer-security.insecureAPI.*,bugprone-*,-bugprone-easily-swappable-parameters,-bugprone-reserved-identifier,-bugprone-narrowing-conversions,-bugprone-assignment-in-if-condition,-bugprone-implicit-widening-of-multiplication-result,-bugprone-branch-clone,-bugprone-signal-handler'
jobs=${JOBS:-$(nproc)}
log=$(mktemp)
trap 'rm -rf "$log" "$gen"' EXIT
# One clang-tidy per file, JOBS at a time; any file's failure fails the run.
export checks cflags
# shellcheck disable=SC2086,SC2016
if ! printf '%s\n' $srcs | xargs -P "$jobs" -n 1 sh -c \
	'clang-tidy --quiet --warnings-as-errors="*" --checks="$checks" "$1" -- $cflags' sh \
	>"$log" 2>&1; then
	grep -v 'warnings generated' "$log" | head -n 80
	echo "lint: clang-tidy found problems" >&2
	exit 1
fi
echo "lint: cppcheck and clang-tidy clean"
