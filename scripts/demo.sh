#!/bin/bash
# The demo: a few programs in several languages through `airlock run`, each
# ending in its typed outcome (success, failure, timeout, refusal, limits).
set -u
BIN=${1:?usage: demo.sh PATH-TO-airlock}
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
A=("$BIN" --state-dir "$state")

# Prints the command as one would type it: plain words bare, others quoted.
print_cmd() {
	local a
	printf '$ airlock'
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@+-]+$ ]]; then
			printf ' %s' "$a"
		else
			printf " '%s'" "${a//\'/\'\\\'\'}"
		fi
	done
}

show() {
	local title=$1
	shift
	printf '\n\033[1m== %s\033[0m\n' "$title"
	print_cmd "$@"
	printf '\n'
	"${A[@]}" "$@"
	printf '(exit status %d)\n' "$?"
}

summary() {
	local title=$1
	shift
	printf '\n\033[1m== %s\033[0m\n' "$title"
	print_cmd "$@"
	printf ' --json\n'
	"${A[@]}" "$@" --json | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
keep = {k: r.get(k) for k in ("outcome", "reason", "exit_code", "signal")}
keep["provider"] = (r.get("provider") or {}).get("id")
keep["wall_ms"] = r["usage"]["wall_ms"]
print(json.dumps(keep))'
}

show "python, in the sandbox by default" run -l python -e 'print(6*7)'
show "javascript" run -l javascript -e 'console.log([1,2,3].map(x => x * 2).join(" "))'
show "ruby" run -l ruby -e 'puts "ruby says #{6 * 7}"'
show "typescript" run -l typescript -e 'const n: number = 42; console.log(`typescript says ${n}`)'
show "a failure keeps its exit status" run -l sh -e 'echo "something went wrong" >&2; exit 3'
summary "a timeout" run -l python -t 500ms -e 'import time; time.sleep(30)'
summary "a memory bomb is killed" run -l python -m 64M -e 'x = bytearray(512 * 1024 * 1024)'
summary "a refusal: the sandbox does not give out the host's network" run -l sh --network host -e 'true'
CFG=$(cd "$(dirname "$0")/.." && pwd)/examples/demo-config.json
A=("$BIN" --state-dir "$state" --config "$CFG")
summary "denied: tenant acme may not run ruby (examples/demo-config.json)" run --tenant acme -l ruby -e 'puts 1'
summary "denied: tenant acme has no loopback grant" run --tenant acme --network loopback -l sh -e 'true'
summary "denied: above tenant acme's memory ceiling" run --tenant acme -m 1G -l python -e 'pass'
summary "tenant acme within its grant" run --tenant acme -l python -e 'print(1)'
summary "a refusal: unknown language" run -l cobol -e 'DISPLAY 1'
A=("$BIN" --state-dir "$state")
summary "the trusted local provider, chosen explicitly" run -p local -l sh -e 'echo local'
summary "execution switched off" run -p disabled -l sh -e 'echo never'
printf '\n\033[1m== every run left an audit record\033[0m\n'
"${A[@]}" audit tail -n 6
"${A[@]}" audit verify
