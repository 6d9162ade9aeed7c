#!/usr/bin/python3
"""`make bench`'s compiled-language row: C hello world through the API
(`airlock serve`, the sandbox provider), the build cached and not, against
the same done with bare gcc + run.  Standard library only; reuses
driver.py's daemon.  Prints a markdown table and writes it to --out.

usage: bench/compiled.py --airlock ABS_PATH [--rounds N] [--out FILE]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from driver import Daemon, fmt_ms, median, p90  # noqa: E402

HELLO = '#include <stdio.h>\nint main(void) { puts("hello world"); return 0; }\n'


def bare_gcc(work, code, rounds):
    """gcc -O2 into a fresh file, then run it: what a build-per-run
    service pays without any sandbox."""
    src = os.path.join(work, "main.c")
    with open(src, "w") as f:
        f.write(code)
    times = []
    for i in range(rounds):
        out = os.path.join(work, "main-%d" % i)
        t0 = time.monotonic()
        subprocess.run(["gcc", "-std=gnu17", "-O2", "-o", out, src, "-lm"],
                       check=True)
        p = subprocess.run([out], capture_output=True, text=True, check=True)
        times.append((time.monotonic() - t0) * 1000)
        assert p.stdout == "hello world\n"
        os.unlink(out)
    return times


def api(daemon, rounds, cached):
    times, hits = [], 0
    for i in range(rounds):
        # a different comment per round: a new key, so it builds
        code = HELLO if cached else HELLO + "/* round %d %f */\n" % (i, time.time())
        t0 = time.monotonic()
        res = daemon.post({"language": "c", "code": code})
        times.append((time.monotonic() - t0) * 1000)
        assert res.get("outcome") == "completed", res
        assert res["stdout"] == "hello world\n", res
        hits += bool(res["build"]["cache_hit"])
    return times, hits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlock", required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="airlock-bench-c-") as work:
        state = os.path.join(work, "state")
        os.mkdir(state, 0o700)
        cfg = os.path.join(work, "config.json")
        with open(cfg, "w") as f:
            json.dump({"state_dir": state,
                       "providers": [{"provider": "sandbox"}],
                       "tenants": {"default": {
                           "languages": "*",
                           "grant": {"network": ["none"],
                                     "workspace": ["none", "ro", "rw"],
                                     "secrets": [], "streaming": True}}}}, f)
        bare = bare_gcc(work, HELLO, a.rounds)
        d = Daemon(a.airlock, state, os.path.join(work, "serve.log"), cfg)
        try:
            api(d, 2, True)  # warm-up: the first one fills the cache
            cold, cold_hits = api(d, a.rounds, False)
            warm, warm_hits = api(d, a.rounds, True)
            shell = []
            for _ in range(a.rounds):
                t0 = time.monotonic()
                res = d.post({"language": "sh", "code": "echo hello world"})
                shell.append((time.monotonic() - t0) * 1000)
                assert res.get("outcome") == "completed", res
        finally:
            d.stop()
    assert cold_hits == 0 and warm_hits == a.rounds, (cold_hits, warm_hits)
    rows = [("bare gcc -O2 + run", bare, "no sandbox, no cache"),
            ("airlock API, build every time", cold, "new source each round: build step + run step, two sandboxes"),
            ("airlock API, build cached", warm, "same source: cache hit, run step only"),
            ("airlock API, sh echo (reference)", shell, "no build step: the run alone")]
    load = open("/proc/loadavg").read().split()[0]
    lines = ["## C hello world: build cached vs not (%d rounds, ms; load %s)"
             % (a.rounds, load), "",
             "| variant | median | p90 | note |", "|---|---|---|---|"]
    for name, t, note in rows:
        lines.append("| %s | %s | %s | %s |" % (name, fmt_ms(median(t)), fmt_ms(p90(t)), note))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
