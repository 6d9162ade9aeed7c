#!/bin/sh
# Runs the sandbox integration tests once as an unprivileged user: the
# sandbox without root (own uid, user namespaces, no delegated cgroup) is a
# configuration of its own (docs/testing.md).
#
#   scripts/run-unprivileged.sh build/airlock
#
# As root it uses (creating it when missing) the system user
# $AIRLOCK_UNPRIV_USER (default airlock-unpriv); run by anyone else it runs
# the tests as that caller.  The binary, its modules and the tests are
# copied to a fresh directory the user can read, wherever the checkout
# lives (e.g. under a 0700 /root).  With AIRLOCK_REQUIRE_SANDBOX=1 an
# unavailable sandbox fails the tests instead of skipping them.
set -eu

bin=${1:?usage: run-unprivileged.sh AIRLOCK_BINARY}
repo=$(cd "$(dirname "$0")/.." && pwd)
user=${AIRLOCK_UNPRIV_USER:-airlock-unpriv}
tests="test_sandbox_*.py test_attack_leaks.py"

work=$(mktemp -d /tmp/airlock-unpriv.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir "$work/bin" "$work/home"
# the network modules are loaded from beside the binary
cp "$bin" "$work/bin/airlock"
for so in "$(dirname "$bin")"/libairlock-*.so; do
	[ -e "$so" ] && cp "$so" "$work/bin/"
done
# and airlock-tool from toolbelt/ beside it (docs/toolbelt.md)
if [ -d "$(dirname "$bin")/toolbelt" ]; then
	cp -R "$(dirname "$bin")/toolbelt" "$work/bin/"
fi
cp -R "$repo/tests/integration" "$work/tests"

if [ "$(id -u)" = 0 ]; then
	if ! id -u "$user" >/dev/null 2>&1; then
		useradd --system --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$user"
	fi
	chown -R "$user:" "$work"
	chmod 0755 "$work"
	as_user="setpriv --reuid=$user --regid=$user --init-groups --"
	who=$user
else
	as_user=
	who=$(id -un)
fi
echo "sandbox integration tests as $who (uid $(id -u "$who"))"

cd "$work/tests"
# shellcheck disable=SC2086 # $as_user and $tests are word lists
$as_user env -i HOME="$work/home" PATH=/usr/local/bin:/usr/bin:/bin \
	LANG=C.UTF-8 AIRLOCK_BIN="$work/bin/airlock" AIRLOCK_REQUIRE_SANDBOX=1 \
	/usr/bin/python3 -m pytest -q -p no:cacheprovider -rs $tests
