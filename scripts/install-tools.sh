#!/bin/sh
# Installs the project's own helper tools into <repo>/tools with npm:
# esbuild, the TypeScript transpiler used when no Node.js that strips types
# is installed (Node 20 cannot).  esbuild ships its native binary inside an
# npm package, so running it needs no node.  Idempotent: does nothing when
# the pinned version is already present.  Override the target directory with
# AIRLOCK_TOOLS_DIR.
set -eu

ESBUILD_VERSION=0.28.2

repo=$(cd "$(dirname "$0")/.." && pwd)
tools=${AIRLOCK_TOOLS_DIR:-$repo/tools}
pkg=$tools/node_modules/esbuild/package.json

installed_version() {
	# package.json is JSON; a sed pattern is enough for its "version" key.
	[ -f "$pkg" ] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pkg" | head -n 1
}

if [ "$(installed_version)" = "$ESBUILD_VERSION" ] &&
   [ -x "$tools/node_modules/.bin/esbuild" ]; then
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "install-tools: npm not found; TypeScript needs Node.js >= 22.6 or esbuild" >&2
	exit 1
fi

mkdir -p "$tools"
echo "install-tools: installing esbuild@$ESBUILD_VERSION into $tools" >&2
npm install --prefix "$tools" --no-audit --no-fund --loglevel=error \
	--no-save "esbuild@$ESBUILD_VERSION" >/dev/null

[ "$(installed_version)" = "$ESBUILD_VERSION" ] || {
	echo "install-tools: esbuild@$ESBUILD_VERSION did not install" >&2
	exit 1
}
