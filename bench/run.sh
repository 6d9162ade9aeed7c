#!/bin/sh
# `make bench`: installs the peers from Debian, builds bench/inproc against
# build/libairlock.a, then runs bench/driver.py, which prints the table and
# writes bench/results/latest.md (quick.md with --quick).  Method:
# bench/README.md.
#
# usage: bench/run.sh ABS_PATH_OF_build/airlock [--quick]
set -eu

if [ $# -lt 1 ] || [ "${1#/}" = "$1" ]; then
	echo "usage: bench/run.sh ABSOLUTE_PATH_OF_AIRLOCK [--quick]" >&2
	exit 2
fi
airlock=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(dirname "$airlock")
cd "$repo"

# ---- peers from Debian ---------------------------------------------------
# util-linux (unshare) is always there.  crun only when this Debian has it.
want="bubblewrap firejail runc"
if apt-cache policy crun 2>/dev/null | grep -q 'Candidate: [0-9]'; then
	want="$want crun"
fi
missing=""
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "bench: installing$missing" >&2
		# shellcheck disable=SC2086 # a list of package names
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $missing >/dev/null ||
			echo "bench: apt-get failed; going on with what is present" >&2
	else
		echo "bench: not root; to add the missing peers run:" >&2
		echo "  sudo apt-get install -y --no-install-recommends$missing" >&2
	fi
fi

# ---- the in-process helper (same flags as the Makefile) ------------------
pkgs="jansson libseccomp libcap sqlite3 nettle libmicrohttpd"
mkdir -p "$build/bench"
# shellcheck disable=SC2046,SC2086 # flags and package names are words
${CC:-cc} -std=c17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wshadow \
	-Wformat=2 -Wno-missing-field-initializers -Iinclude -Isrc \
	$(pkg-config --cflags $pkgs) -o "$build/bench/inproc" bench/inproc.c \
	"$build/libairlock.a" $(pkg-config --libs $pkgs) -lpthread

# shellcheck disable=SC2046 # flags are words
${CC:-cc} -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Wshadow \
	-Wformat=2 -o "$build/bench/floor" bench/floor.c bench/floor_layers.c \
	$(pkg-config --cflags --libs libseccomp)

# A --quick smoke run writes beside the committed results, not over them.
name=latest
case " $* " in *" --quick "*) name=quick ;; esac
/usr/bin/python3 bench/driver.py --airlock "$airlock" \
	--inproc "$build/bench/inproc" --floor "$build/bench/floor" \
	--out "bench/results/$name.md" "$@"
# The compiled-language row (needs gcc; bench/README.md).
if command -v gcc >/dev/null 2>&1; then
	/usr/bin/python3 bench/compiled.py --airlock "$airlock" \
		--out "bench/results/compiled-$name.md"
fi
# The fleet rows (docs/scale-out.md): nodes on one PostgreSQL 15.
/usr/bin/python3 bench/fleet.py --airlock "$airlock" \
	--out "bench/results/fleet-$name.md"

# The kernel's floor beside bwrap (bench/README.md, "The floor").
echo
echo "## The floor: clone3 + execve + wait and airlock's layers, sh -c true (bench/floor)"
echo
"$build/bench/floor" 200 /bin/sh -c true
