"""Shared support for the workspace and outputs tests (docs/workspaces.md):
running `airlock run --json` on the sandbox (this session's uid range) or
the local provider, with a private state directory, from a whole request
or from CLI options.

No tests live here; test_workspace*.py and test_outputs*.py import it.
"""
import base64
import hashlib
import json
import os
import resource
import subprocess

import pytest

from sandbox_helpers import BIN, need, session_config

PROVIDERS = ["sandbox", "local"]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def need_provider(provider, language="sh", limit=None):
    if provider == "sandbox":
        need(language=language, limit=limit)


def cli(state_dir, provider, *args, timeout=60, cwd=None, env=None,
        nofile=None):
    """`airlock --state-dir S [--config C] ARGS` (no --json added);
    nofile: the CLI's RLIMIT_NOFILE."""
    cmd = [BIN, "--state-dir", state_dir]
    if provider == "sandbox":
        cmd += ["--config", session_config()]
    cmd += list(args)
    e = dict(os.environ)
    e.pop("AIRLOCK_CONFIG", None)
    if env:
        e.update(env)
    pre = None
    if nofile is not None:
        def pre():
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    return subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=cwd,
                          env=e, preexec_fn=pre)


def result_of(p):
    try:
        return json.loads(p.stdout.decode())
    except ValueError:
        raise AssertionError("no JSON result: rc=%d stderr=%s" %
                             (p.returncode, p.stderr.decode()))


def run_request(state_dir, provider, request, tmp_path, timeout=60,
                env=None, nofile=None):
    """Runs a whole JSON request on the provider; returns the result."""
    req = dict(request)
    grant = dict(req.get("grant", {}))
    grant["network"] = "host" if provider == "local" else "none"
    req["grant"] = grant
    path = tmp_path / ("request-%d.json" % os.getpid())
    path.write_text(json.dumps(req))
    p = cli(state_dir, provider, "run", "-p", provider, "--json",
            "--request", str(path), timeout=timeout, env=env, nofile=nofile)
    return result_of(p)


def artifact(state_dir, run_id, artifact_id):
    """The bytes of one artifact, through `airlock runs artifact`."""
    p = subprocess.run([BIN, "--state-dir", state_dir, "runs", "artifact",
                        run_id, artifact_id], capture_output=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def outputs_by_path(res):
    return {o["path"]: o for o in res["outputs"]}


def file_entry(path, data, mode="0644"):
    try:
        text = data.decode()
        if "\0" in text:
            raise UnicodeError
        return {"path": path, "content": text, "mode": mode}
    except UnicodeError:
        return {"path": path, "content_b64": base64.b64encode(data).decode(),
                "mode": mode}


def store_bytes(state_dir):
    """Every byte kept in the artifact stores (to show nothing of the
    host's files got in)."""
    out = b""
    base = os.path.join(state_dir, "artifacts")
    for root, _dirs, files in os.walk(base):
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p):
                raise AssertionError("a link in the artifact store: " + p)
            with open(p, "rb") as fh:
                out += fh.read()
    return out


@pytest.fixture(params=PROVIDERS)
def provider(request):
    return request.param
