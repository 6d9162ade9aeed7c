#!/bin/sh
# Writes the linker version script of libairlock.so to standard output:
# every al_ function the public headers declare is exported, everything
# else (the internal al_sb_*, al_srv_*, ... functions) is local.
#
#   dist/gen-libairlock-map.sh ABI include/airlock/*.h
#
# Comments are stripped first (the C preprocessor, without expanding
# includes) so a function a comment merely mentions is not exported.  A
# declared function libairlock does not define (the conformance kit's
# al_kit_*, in libairlock-contract.a) is listed harmlessly.
set -eu
abi=$1
shift
echo "/* Generated from the public headers by dist/gen-libairlock-map.sh. */"
echo "AIRLOCK_$abi {"
echo "  global:"
for h in "$@"; do
	${CC:-cc} -fpreprocessed -dD -E -P "$h"
done | grep -oE '\bal_[a-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | sort -u |
	sed 's/.*/    &;/'
echo "  local:"
echo "    *;"
echo "};"
