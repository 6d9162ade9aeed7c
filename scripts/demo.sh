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

# ---- the runner service ------------------------------------------------
printf '\n\033[1m== the runner service: airlock serve, then curl\033[0m\n'
svc=$(mktemp -d)
token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
hash=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)
/usr/bin/python3 - "$CFG" "$svc/config.json" "$hash" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["tokens"] = {sys.argv[3]: "acme"}
json.dump(cfg, open(sys.argv[2], "w"))
PY
"$BIN" --state-dir "$svc/state" --config "$svc/config.json" serve \
	--listen 127.0.0.1:0 >"$svc/log" 2>&1 &
daemon=$!
port=""
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$svc/log")
	[ -n "$port" ] && break
	sleep 0.05
done
cat "$svc/log"
post() {
	local title=$1 body=$2
	printf '\n-- %s\n$ curl -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -d %s http://127.0.0.1:%s/v1/runs\n' \
		"$title" "'$body'" "$port"
	curl -s -w '\n' -H "Authorization: Bearer $token" \
		-H "Content-Type: application/json" -d "$body" \
		"http://127.0.0.1:$port/v1/runs" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
out = r.get("stdout", "")
print(json.dumps({"outcome": r["outcome"], "reason": r.get("reason"),
                  "exit_code": r.get("exit_code"), "stdout": out}))'
}
if [ -n "$port" ]; then
	post "python" '{"language":"python","code":"print(sum(range(10)))"}'
	post "sh with stdin" '{"language":"sh","code":"tr a-z A-Z","stdin":"shout\n"}'
	post "a timeout" '{"language":"python","code":"while True: pass","limits":{"wall_ms":500}}'
	post "a memory-limit kill" '{"language":"python","code":"x = bytearray(1 << 30)","limits":{"memory_bytes":67108864}}'
	post "a denied grant (acme has no loopback)" '{"language":"sh","code":"true","grant":{"network":"loopback"}}'
	post "a language acme may not use" '{"language":"ruby","code":"puts 1"}'
	printf '\n-- health and metrics\n'
	curl -s "http://127.0.0.1:$port/v1/health"; echo
	curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics" | grep '^airlock_runs_total' | head -5
else
	echo "the service did not start"
fi
kill -TERM "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
rm -rf "$svc"
