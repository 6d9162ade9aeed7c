"""The JavaScript client (clients/js) against a real airlockd on loopback:
type-checks it and its test with the pinned TypeScript (`tsc --noEmit`),
transpiles both with the pinned esbuild into a temporary directory, and
runs node's own test runner on them with the daemon's URL and token file
in the environment.  Node's failures fail this test.  Skipped, with the
reason, only when node is not installed; the pinned tools are installed
by scripts/install-tools.sh (scripts/install-deps.sh runs it)."""
import json
import os
import shutil
import subprocess

import pytest

from test_api_support import Daemon, local_config

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JS = os.path.join(REPO, "clients", "js")
TOOLS = os.environ.get("AIRLOCK_TOOLS_DIR") or os.path.join(REPO, "tools")
BIN = os.path.join(TOOLS, "node_modules", ".bin")


def tool(name):
    path = os.path.join(BIN, name)
    assert os.access(path, os.X_OK), \
        "%s missing: run scripts/install-tools.sh" % path
    return path


def run(args, timeout, env=None):
    p = subprocess.run(args, cwd=REPO, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


@pytest.fixture
def node():
    exe = shutil.which("node") or shutil.which("nodejs")
    if exe is None:
        pytest.fail("node is not installed: run scripts/install-deps.sh "
                    "(Debian's nodejs)")
    return exe


def test_js_client_type_checks(node):
    rc, out = run([tool("tsc"), "-p", os.path.join(JS, "tsconfig.json"),
                   "--noEmit", "--typeRoots",
                   os.path.join(TOOLS, "node_modules", "@types")], 120)
    assert rc == 0, out


def test_js_client_against_airlockd(node, tmp_path):
    out_dir = tmp_path / "js"
    rc, out = run([tool("esbuild"),
                   os.path.join(JS, "src", "index.ts"),
                   os.path.join(JS, "test", "client.test.ts"),
                   "--outdir=" + str(out_dir), "--outbase=" + JS,
                   "--format=esm", "--platform=node", "--target=node20",
                   "--log-level=warning"], 60)
    assert rc == 0, out
    (out_dir / "package.json").write_text(json.dumps({"type": "module"}))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    d = Daemon(tmp_path, local_config(concurrency=8)).start()
    try:
        env = dict(os.environ,
                   AIRLOCK_URL="http://127.0.0.1:%d" % d.port,
                   AIRLOCK_TOKEN_FILE=str(d.state / "token"),
                   AIRLOCK_TMP=str(scratch))
        rc, out = run([node, "--test", "--test-reporter=spec",
                       str(out_dir / "test" / "client.test.js")], 300,
                      env=env)
    finally:
        d.stop()
    print(out)
    assert rc == 0, out
    # a run of node's that found no tests would pass: count them
    assert "ℹ pass 9" in out and "ℹ fail 0" in out, out
