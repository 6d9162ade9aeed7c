"""Shared support for the Piston and Judge0 compat tests
(docs/compat.md): a daemon on the sandbox provider with both APIs on,
tenants with and without grants, and an anonymous tenant."""
import hashlib
import time

from sandbox_helpers import need
from test_api_support import Daemon

# 64 hex digits: also what the generated token file of a daemon without
# a "tokens" section holds.
TOKEN = hashlib.sha256(b"compat-test-default").hexdigest()
NONET = hashlib.sha256(b"compat-test-nonet").hexdigest()
GRANT = {"network": ["none", "loopback", "host"],
         "workspace": ["none", "ro", "rw"], "secrets": [], "streaming": True}


def sha(t):
    return hashlib.sha256(t.encode()).hexdigest()


def config(anonymous_rate=None):
    anon = {"anonymous_tenant": "anon",
            "anonymous_rate": anonymous_rate or {"requests": 1000,
                                                 "per_s": 60}}
    return {
        "execution_enabled": True,
        "providers": ["sandbox"],
        "tenants": {
            "default": {"languages": "*", "grant": GRANT},
            "nonet": {"languages": "*",
                      "grant": {"network": ["none"],
                                "workspace": ["none", "ro"],
                                "secrets": [], "streaming": True}},
            "anon": {"languages": "*", "grant": GRANT},
        },
        "tokens": {sha(TOKEN): "default", sha(NONET): "nonet"},
        "compat": {"piston": dict(anon), "judge0": {}},
    }


DEFAULTS = object()


def start(tmp_path, cfg=DEFAULTS, name="d", extra_args=()):
    """cfg None: no configuration file (the built-in defaults)."""
    need(language="python")
    d = Daemon(tmp_path, config() if cfg is DEFAULTS else cfg, name=name,
               extra_args=extra_args)
    d.state.mkdir(mode=0o700, parents=True)
    d.state.joinpath("token").write_text(TOKEN)
    d.state.joinpath("token").chmod(0o600)
    return d.start()


def poll(fn, timeout=30):
    """Calls fn until it returns a true value (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("condition not met in %ss" % timeout)
