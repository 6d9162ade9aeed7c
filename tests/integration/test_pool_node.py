"""The warm node interpreter through airlockd (docs/sandbox.md, "Warm
pools"): with a javascript pool, the daemon's warm supervisor holds a
member whose node is already started; an API run takes it (the pool's
counters, AIRLOCK_SANDBOX_POOL_STATS, say so: this cannot pass by running
cold) and shows what the same run shows cold — argv, execArgv, the
environment, cwd, globals, require.main, stdin, an uncaught exception's
report and status, process.exit.  The cold runs are the same requests
with a read-only workspace, which a member (of workspace "none") cannot
take.  Another limit would do too, but a member's node cannot set its
own rlimits: the supervisor's next member would start with that run's,
and the next warm request would go cold."""
import json
import re

import pytest

from test_durable_support import (DurableDaemon, assert_no_sanitizer_reports,
                                  cleanup_state, wait_until)
from test_idle_supervisors import metrics, wait_idle

PROBE = r'''
const fs = require('fs');
console.log(JSON.stringify({
  argv: process.argv, execArgv: process.execArgv,
  env: Object.keys(process.env).sort(), cwd: process.cwd(),
  globals: Object.getOwnPropertyNames(globalThis).sort(),
  main: require.main === module, id: module.id, file: __filename,
  cache: Object.keys(require.cache), evalSource: typeof process._eval,
  stdin: fs.readFileSync(0, 'utf8'),
}));
// a member's node was started as `node -e LOADER` (a documented residue)
console.error(fs.readFileSync('/proc/self/cmdline', 'utf8').split('\0')[1]);
const a = process.argv[2];
if (a === 'throw') { function inner() { throw new RangeError('boom'); } inner(); }
if (a === 'exit') process.exit(7);
'''


def pool_config():
    grant = {"network": ["none"], "workspace": ["none", "ro", "rw"],
             "secrets": [], "streaming": True}
    return {"providers": [{"provider": "sandbox",
                           "config": {"pool": {"javascript": {"size": 1}}}}],
            "idle_supervisors": 0,
            "tenants": {"default": {"languages": "*", "grant": grant}}}


def entry_frames_cut(err):
    """Without the frames below Module.runMain: a cold start's entry
    frame, the loader's in a member (a documented difference)."""
    lines, out, skip = err.split("\n"), [], False
    for line in lines:
        if skip and line.startswith("    at "):
            continue
        skip = False
        out.append(line)
        if "[as runMain]" in line:
            skip = True
    return "\n".join(out)


def test_api_javascript_runs_take_warm_node_members(tmp_path):
    stats = tmp_path / "pool-stats.jsonl"
    d = DurableDaemon(tmp_path, pool_config())
    try:
        d.start(env={"AIRLOCK_SANDBOX_POOL_STATS": str(stats)})
        st, _, caps = d.request("GET", "/v1/capabilities")
        sb = caps["providers"][0]
        if not sb["available"]:
            pytest.skip("the sandbox with a pool configured is unavailable "
                        "here (probe: %s)" % sb["unavailable_reason"])
        if "javascript" not in [lang["language"]
                                for lang in sb["languages"]]:
            pytest.skip("the sandbox found no javascript toolchain")
        cases = [("state", "in\n", 0), ("throw", "", 1), ("exit", "", 7)]
        for arg, stdin, code in cases:
            res = {}
            for how in ("warm", "cold"):
                wait_idle(d, 1, kind="warm")
                req = {"language": "javascript", "code": PROBE,
                       "argv": [arg, "x y"], "stdin": stdin,
                       "env": {"MODE": "fast"}}
                if how == "cold":
                    req["grant"] = {"workspace": "ro"}
                st, _, res[how] = d.run(req)
                assert st == 200, res[how]
            w, c = res["warm"], res["cold"]
            assert w["exit_code"] == c["exit_code"] == code, (w, c)
            assert w["outcome"] == c["outcome"], (w, c)
            assert w["stdout"] == c["stdout"], (w, c)
            # really warm, really cold
            assert w["stderr"].startswith("-e\n"), w
            assert c["stderr"].startswith("/code/main.js\n"), c
            rest = [entry_frames_cut(r["stderr"]).split("\n", 1)[1]
                    for r in (w, c)]
            assert rest[0] == rest[1], (w, c)
            seen = json.loads(w["stdout"].splitlines()[0])
            assert seen["argv"][1:] == ["/code/main.js", arg, "x y"], seen
            assert seen["execArgv"] == [] and seen["main"], seen
            assert seen["evalSource"] == "undefined", seen
            assert seen["stdin"] == stdin and seen["cwd"] == "/workspace"
            assert "MODE" in seen["env"], seen
            assert "require" not in seen["globals"], seen
            if arg == "throw":
                assert re.search(r"^RangeError: boom$", w["stderr"], re.M), w
                assert "/code/main.js:" in w["stderr"], w
        m = metrics(d)
        assert m["handoff_warm"] == 6 and m.get("cold", 0) == 0, m
        # One supervisor served them all (docs/durability.md, "A
        # supervisor that serves several runs"); each supervisor writes
        # its pool's counters when it releases its handle, at the latest
        # when the daemon stops.  The warm requests took a member, the
        # read-only ones went cold.
        d.stop()
        wait_until(lambda: stats.exists() and
                   len(stats.read_text().splitlines()) >= 1,
                   what="the pools' counters")
        lines = [json.loads(x) for x in stats.read_text().splitlines()]
        assert sum(x["taken"] for x in lines) == 3, lines
        assert sum(x["cold"] for x in lines) == 3, lines
        assert sum(x["failed"] for x in lines) == 0, lines
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
    assert_no_sanitizer_reports(d)
