"""The toolbelt of `airlock run` (docs/toolbelt.md): the same command and
socket served by the CLI process itself, a host operation of the module
kind (a shared object built here), the result's events, and the exit
status of a declared failure."""
import json
import os
import subprocess

import pytest

AIRLOCK_BIN = os.environ.get("AIRLOCK_BIN", "")

MODULE = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int airlock_operation(const char *operation, const char *run_id,
                      const char *input_json, char **output_json)
{
    if (strcmp(input_json, "{\"fail\":true}") == 0)
        return 1;
    size_t n = strlen(input_json) + strlen(operation) + 64;
    *output_json = malloc(n);
    snprintf(*output_json, n, "{\"op\":\"%s\",\"got\":%s,\"run\":%d}",
             operation, input_json, (int)strlen(run_id));
    return 0;
}
'''


@pytest.fixture
def module(tmp_path):
    src = tmp_path / "op.c"
    src.write_text(MODULE)
    so = tmp_path / "op.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)],
                   check=True)
    return so


def airlock(tmp_path, cfg, *args):
    state = tmp_path / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    conf = tmp_path / "config.json"
    conf.write_text(json.dumps(cfg))
    return subprocess.run([AIRLOCK_BIN, "--state-dir", str(state),
                           "--config", str(conf), "run"] + list(args),
                          capture_output=True, text=True, timeout=60)


def config(module_path):
    return {"trusted_provider_acknowledged": True,
            "providers": ["local"],
            "tenants": {"default": {
                "languages": ["sh"],
                "operations": {
                    "lookup": {"kind": "module", "path": str(module_path)},
                    "other": {"kind": "module", "path": str(module_path),
                              "symbol": "no_such_symbol"}},
                "grant": {"network": ["host"], "toolbelt": True,
                          "operations": ["lookup", "other"]}}}}


CODE = r'''
airlock-tool emit --type step '{"n": 1}' >/dev/null
airlock-tool call lookup '{"k": "v"}'
airlock-tool call lookup '{"fail": true}'; echo "rc=$?"
airlock-tool call other; echo "rc=$?"
airlock-tool outcome failed --reason cli_declared >/dev/null
'''


def test_airlock_run_serves_the_toolbelt(tmp_path, module):
    p = airlock(tmp_path, config(module), "--json", "-p", "local",
                "--operation", "lookup", "--operation", "other",
                "-l", "sh", "-e", CODE)
    assert p.returncode == 1, p.stderr
    res = json.loads(p.stdout)
    out = res["stdout"].splitlines()
    assert json.loads(out[0]) == {"op": "lookup", "got": {"k": "v"},
                                  "run": 36}
    assert out[1:] == ['{"ok":false,"error":"operation_failed"}', "rc=1",
                       '{"ok":false,"error":"operation_unavailable"}',
                       "rc=1"]
    assert res["outcome"] == "failed" and res["reason"] == "declared"
    assert res["declaration"] == {"outcome": "failed",
                                  "reason": "cli_declared"}
    assert [(e["type"], e["data"]) for e in res["events"]] == \
        [("step", {"n": 1})]
    assert [(c["operation"], c["outcome"]) for c in res["host_calls"]] == \
        [("lookup", "ok"), ("lookup", "operation_failed"),
         ("other", "operation_unavailable")]
    # The run's socket and token are gone with it.
    assert list((tmp_path / "state" / "toolbelt").iterdir()) == []


def test_without_toolbelt_flag_the_grant_is_not_asked(tmp_path, module):
    p = airlock(tmp_path, config(module), "--json", "-p", "local", "-l",
                "sh", "-e", "command -v airlock-tool || echo absent")
    res = json.loads(p.stdout)
    assert res["stdout"] == "absent\n" and "events" not in res


def test_a_module_operation_needs_an_absolute_path(tmp_path, module):
    cfg = config(module)
    cfg["tenants"]["default"]["operations"]["lookup"]["path"] = "op.so"
    p = airlock(tmp_path, cfg, "-p", "local", "-l", "sh", "-e", "true")
    assert p.returncode != 0
    assert "operations.lookup" in p.stderr and "absolute" in p.stderr
