"""A toolchain part under /tmp (a checkout in /tmp whose tools/ holds
esbuild) would be hidden inside the sandbox by the sandbox's own /tmp: the
probe reports the language absent with a reason naming the path and the
directory that hides it (instead of failing a trial silently), and a run of
that language is refused as unsupported_language."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from sandbox_helpers import BIN, facts, need, session_config


def node_version():
    for lang in facts()["languages"]:
        if lang["language"] == "javascript":
            return tuple(int(x) for x in lang["version"].split(".")[:2])
    return None


@pytest.fixture
def tmp_tools():
    need(language="javascript")
    v = node_version()
    if v is not None and v >= (22, 6):
        pytest.skip("sandbox facts: node %d.%d strips types itself, so "
                    "typescript uses no esbuild" % v)
    d = tempfile.mkdtemp(prefix="al-tc-", dir="/tmp")
    try:
        bindir = os.path.join(d, "tools", "node_modules", ".bin")
        os.makedirs(bindir)
        # any native executable is an esbuild to the probe's locator
        shutil.copy(shutil.which("true"), os.path.join(bindir, "esbuild"))
        env = dict(os.environ, AIRLOCK_TOOLS_DIR=os.path.join(d, "tools"))
        yield d, env
    finally:
        shutil.rmtree(d, True)


def test_probe_says_why_a_toolchain_under_tmp_is_absent(tmp_tools):
    d, env = tmp_tools
    p = subprocess.run([BIN, "--config", session_config(), "probe", "-p",
                        "sandbox", "--json"], capture_output=True, text=True,
                       env=env, timeout=120)
    f = json.loads(p.stdout)
    langs = [l["language"] for l in f["languages"]]
    assert "typescript" not in langs
    assert "javascript" in langs
    why = f["mechanism"]["languages_absent"]["typescript"]
    assert why.startswith("toolchain_hidden: "), why
    assert d + "/tools/node_modules/.bin/esbuild" in why
    assert "under /tmp," in why


def test_run_of_that_language_is_refused(tmp_tools):
    _, env = tmp_tools
    p = subprocess.run([BIN, "--config", session_config(), "run", "-p",
                        "sandbox", "-l", "typescript", "-e",
                        "const x: number = 1; console.log(x)", "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    r = json.loads(p.stdout)
    assert r["outcome"] == "unsupported_language", r
