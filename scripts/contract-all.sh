#!/bin/bash
# Runs the conformance kit against every built-in provider — `remote`
# through a real airlockd started here on loopback — and the example
# third-party provider.  Any failing case fails the script.
set -u
BIN=${1:?usage: contract-all.sh PATH-TO-airlock [EXAMPLE-KIT-BINARY]}
EXAMPLE=${2:-}
work=$(mktemp -d)
daemon=""
cleanup() {
	[ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# The daemon's defaults, plus: the kit's tenant may forward the
# environment its host resolved (env.host_env through `remote`).
cat >"$work/daemon.json" <<'JSON'
{"providers": ["sandbox"],
 "tenants": {"default": {"languages": "*",
                         "grant": {"network": ["none", "loopback", "host"],
                                   "workspace": ["none", "ro", "rw"],
                                   "streaming": true, "toolbelt": true},
                         "accept_forwarded_env": true}}}
JSON
"$BIN" --state-dir "$work/remote-state" --config "$work/daemon.json" serve --listen 127.0.0.1:0 >"$work/serve.log" 2>&1 &
daemon=$!
port=""
for _ in $(seq 1 200); do
	port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
	[ -n "$port" ] && [ -s "$work/remote-state/token" ] && break
	sleep 0.05
done
if [ -z "$port" ]; then
	echo "contract: airlockd did not start:" >&2
	cat "$work/serve.log" >&2
	exit 1
fi
# The kit calls each provider directly, so `remote` needs no entry in
# acknowledged_providers here; a host running code on it would.
cat >"$work/config.json" <<JSON
{"providers": ["sandbox",
               {"provider": "remote",
                "config": {"url": "http://127.0.0.1:$port",
                           "token_file": "$work/remote-state/token"}}],
 "tenants": {"default": {"languages": "*"}}}
JSON

status=0
"$BIN" --state-dir "$work/state" --config "$work/config.json" contract --all 2>/dev/null \
	| grep -E '^(FAIL|SKIP|conformance kit|[0-9]+ passed)' || true
"$BIN" --state-dir "$work/state" --config "$work/config.json" contract --all --json \
	>"$work/report.json" 2>/dev/null || status=1
# The sandbox again with warm pools on (docs/sandbox.md, "Warm pools"):
# the kit must pass through members, and its runs must really take them.
cat >"$work/pool.json" <<'JSON'
{"providers": [{"provider": "sandbox",
                "config": {"pool": {"sh": {"size": 2, "workspace": "rw"},
                                    "python": {"size": 1, "workspace": "rw"},
                                    "javascript": {"size": 1}}}}],
 "tenants": {"default": {"languages": "*"}}}
JSON
AIRLOCK_SANDBOX_POOL_STATS="$work/pool-stats" "$BIN" --state-dir "$work/pool-state" \
	--config "$work/pool.json" contract -p sandbox --json >"$work/pool-report.json" 2>/dev/null || status=1
if [ -n "$EXAMPLE" ]; then
	echo "conformance kit: example third-party provider ($EXAMPLE)"
	"$EXAMPLE" 2>/dev/null | tail -n 1
	"$EXAMPLE" >/dev/null 2>&1 || status=1
	# The same provider as a module the shipped CLI loads.
	module="$(dirname "$BIN")/modules/example-local.so"
	cat >"$work/module.json" <<JSON
{"acknowledged_providers": ["example-local"],
 "providers": [{"provider": "example-local", "module": "$module"}],
 "tenants": {"default": {"languages": "*"}}}
JSON
	echo "conformance kit: example provider as a module ($module)"
	# Its own state directory, as every run here: the default one is
	# shared with whatever else runs on the host.
	if ! "$BIN" --state-dir "$work/module-state" --config "$work/module.json" \
		contract -p example-local >"$work/module-report.txt" \
		2>"$work/module-stderr.txt"; then
		status=1
		tail -n 20 "$work/module-stderr.txt"
	fi
	tail -n 1 "$work/module-report.txt"
fi
/usr/bin/python3 - "$work/report.json" "$work/pool-report.json" "$work/pool-stats" <<'PY' || status=1
import json, sys
reports = json.load(open(sys.argv[1]))
pooled = json.load(open(sys.argv[2]))
pooled = pooled if isinstance(pooled, list) else [pooled]
for r in pooled:
    r["provider"] += "+pool"
bad = 0
for r in reports + pooled:
    cases = r["cases"]
    n = {s: sum(1 for c in cases if c["status"] == s) for s in ("pass", "fail", "skip")}
    print("contract %-9s %d passed, %d failed, %d skipped" % (r["provider"], n["pass"], n["fail"], n["skip"]))
    bad += n["fail"]
# one line per released handle with a pool; the kit's runs took members
stats = [json.loads(line) for line in open(sys.argv[3])]
taken = sum(s["taken"] for s in stats)
print("contract sandbox+pool: %d runs took warm members, %d went cold" %
      (taken, sum(s["cold"] for s in stats)))
if taken < 10:
    bad += 1
sys.exit(1 if bad else 0)
PY
exit $status
