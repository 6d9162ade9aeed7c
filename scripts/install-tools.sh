#!/bin/sh
# Installs the project's own helper tools into <repo>/tools with npm:
# esbuild, the TypeScript transpiler used when no Node.js that strips types
# is installed (Node 20 cannot); typescript and @types/node, only for the
# type check of the JavaScript client (clients/js, its test runs
# `tsc --noEmit`); @apidevtools/swagger-parser, which validates
# docs/openapi.yaml (tests/integration/test_api_openapi.py); puppeteer-core,
# which drives Debian's chromium in the web console's browser test
# (tests/integration/test_console.py; no browser is downloaded); piston-client,
# the Piston API's npm client, driven against airlockd's Piston-compatible API
# (tests/integration/test_compat_piston.py).  esbuild ships its native binary inside an npm package,
# so running it needs no node.
#
# Also promtool (tools/bin/promtool), which checks the daemon's /metrics text
# (tests/integration/test_metrics.py).  Debian ships it only inside the
# `prometheus` package, whose installation creates a user and enables and
# starts the Prometheus server, and brings ~100 MB of web assets; so the
# package is downloaded with `apt-get download` (no root, nothing installed)
# and only /usr/bin/promtool (a static Go binary) is extracted from it.
#
# Idempotent: does nothing when the pinned
# versions are already present.  Override the target directory with
# AIRLOCK_TOOLS_DIR.
set -eu

ESBUILD_VERSION=0.28.2
TYPESCRIPT_VERSION=5.9.3
TYPES_NODE_VERSION=20.19.43
SWAGGER_PARSER_VERSION=12.1.0
PUPPETEER_CORE_VERSION=24.43.1
PISTON_CLIENT_VERSION=1.0.2

repo=$(cd "$(dirname "$0")/.." && pwd)
tools=${AIRLOCK_TOOLS_DIR:-$repo/tools}

installed_version() {
	# package.json is JSON; a sed pattern is enough for its "version" key.
	pkg=$tools/node_modules/$1/package.json
	[ -f "$pkg" ] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pkg" | head -n 1
}

up_to_date() {
	[ "$(installed_version esbuild)" = "$ESBUILD_VERSION" ] &&
	[ -x "$tools/node_modules/.bin/esbuild" ] &&
	[ "$(installed_version typescript)" = "$TYPESCRIPT_VERSION" ] &&
	[ -x "$tools/node_modules/.bin/tsc" ] &&
	[ "$(installed_version @types/node)" = "$TYPES_NODE_VERSION" ] &&
	[ "$(installed_version @apidevtools/swagger-parser)" = "$SWAGGER_PARSER_VERSION" ] &&
	[ "$(installed_version puppeteer-core)" = "$PUPPETEER_CORE_VERSION" ] &&
	[ "$(installed_version piston-client)" = "$PISTON_CLIENT_VERSION" ]
}

install_promtool() {
	[ -x "$tools/bin/promtool" ] && return 0
	command -v apt-get >/dev/null 2>&1 || {
		echo "install-tools: apt-get not found; promtool not installed" >&2
		return 1
	}
	dl=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$dl'" EXIT
	(cd "$dl" && apt-get download -q prometheus >/dev/null 2>&1) || {
		echo "install-tools: apt-get download prometheus failed; promtool not installed" >&2
		return 1
	}
	mkdir -p "$tools/bin"
	dpkg-deb --fsys-tarfile "$dl"/prometheus_*.deb |
		tar -x -C "$dl" ./usr/bin/promtool &&
	mv "$dl/usr/bin/promtool" "$tools/bin/promtool"
}

install_promtool || true

if up_to_date; then
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "install-tools: npm not found; TypeScript needs Node.js >= 22.6 or esbuild" >&2
	exit 1
fi

mkdir -p "$tools"
echo "install-tools: installing esbuild@$ESBUILD_VERSION typescript@$TYPESCRIPT_VERSION @types/node@$TYPES_NODE_VERSION @apidevtools/swagger-parser@$SWAGGER_PARSER_VERSION puppeteer-core@$PUPPETEER_CORE_VERSION piston-client@$PISTON_CLIENT_VERSION into $tools" >&2
npm install --prefix "$tools" --no-audit --no-fund --loglevel=error \
	--no-save "esbuild@$ESBUILD_VERSION" "typescript@$TYPESCRIPT_VERSION" \
	"@types/node@$TYPES_NODE_VERSION" \
	"@apidevtools/swagger-parser@$SWAGGER_PARSER_VERSION" \
	"puppeteer-core@$PUPPETEER_CORE_VERSION" \
	"piston-client@$PISTON_CLIENT_VERSION" >/dev/null

up_to_date || {
	echo "install-tools: the pinned tools did not install" >&2
	exit 1
}
