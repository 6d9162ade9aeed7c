#!/bin/sh
# Installs the Debian packages airlock needs to build, test and demo, then
# the project's own npm tools (scripts/install-tools.sh).  Idempotent: when
# everything is present it does nothing.  Not root: prints the exact
# apt-get line to run instead.
set -eu

PACKAGES="build-essential pkg-config
libjansson-dev libseccomp-dev libcap-dev libsqlite3-dev nettle-dev libssl-dev
libmicrohttpd-dev libcurl4-openssl-dev libzip-dev libwslay-dev libcmocka-dev libpq-dev postgresql-15
python3 python3-pytest python3-pytest-xdist python3-yaml python3-jsonschema python3-mypy python3-websocket
sqlite3 curl valgrind cppcheck clang-tidy musl-tools
ruby nodejs
gcc g++ golang-go rustc default-jdk-headless
clang libclang-rt-dev
scdoc man-db groff-base systemd zsh
xxd chromium
runc crun runsc umoci skopeo mmdebstrap docker.io"

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

# npm: only when nodejs does not already bring one (NodeSource's does).
if ! command -v npm >/dev/null 2>&1; then
	missing="$missing npm"
fi

if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing packages; run as root:" >&2
		echo "  apt-get update && apt-get install -y --no-install-recommends$missing" >&2
		exit 1
	fi
	echo "install-deps: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

"$(dirname "$0")/install-tools.sh" || \
	echo "install-deps: TypeScript runner not installed; typescript will be reported absent" >&2
