"""Shared support for the compiled-language and judged-case tests: an
airlockd whose only provider is the sandbox, with the build cache on and
every build step logged (AIRLOCK_BUILD_LOG) so tests count compiler runs.

No tests live here."""
import json
import os
import shutil

import pytest

from sandbox_helpers import UID_BASE, UID_COUNT, facts, need
from test_api_support import Daemon

COMPILED = ("c", "cpp", "go", "rust", "java")
# What scripts/install-deps.sh installs for each language.
PACKAGE = {"c": "gcc", "cpp": "g++", "go": "golang-go", "rust": "rustc",
           "java": "default-jdk-headless"}
TOOL = {"c": "gcc", "cpp": "g++", "go": "go", "rust": "rustc",
        "java": "javac"}


def need_language(lang):
    """Skips (with the reason) only when the toolchain is not installed
    here; an installed one the sandbox does not offer fails."""
    need()
    offered = [l["language"] for l in facts()["languages"]]
    if lang in offered:
        return
    if shutil.which(TOOL[lang]) is None:
        pytest.skip("%s is not installed (%s; scripts/install-deps.sh "
                    "installs it)" % (TOOL[lang], PACKAGE[lang]))
    why = facts()["mechanism"].get("languages_absent", {}).get(lang)
    pytest.fail("%s is installed but the sandbox does not offer it: %s"
                % (TOOL[lang], why))


def sandbox_daemon(tmp_path, name="d", concurrency=4, build_cache=None):
    cfg = {
        "execution_enabled": True,
        "providers": [{"provider": "sandbox",
                       "config": {"uid_base": UID_BASE + 50,
                                  "uid_count": UID_COUNT - 50}}],
        "tenants": {"default": {
            "languages": "*", "concurrency": concurrency,
            "grant": {"network": ["none"],
                      "workspace": ["none", "ro", "rw"],
                      "secrets": [], "streaming": True}}},
        "concurrency": concurrency,
    }
    if build_cache is not None:
        cfg["build_cache"] = build_cache
    return Daemon(tmp_path, cfg, name=name)


class BuildLog:
    """The file AIRLOCK_BUILD_LOG names: one line per build step run."""

    def __init__(self, path):
        self.path = path

    def count(self, language=None):
        try:
            lines = open(self.path).read().splitlines()
        except FileNotFoundError:
            return 0
        return sum(1 for l in lines
                   if language is None or json.loads(l)["language"] == language)


def start_logged(tmp_path_factory, name, **kw):
    """A started daemon and its build log (the env var is set only while
    the daemon starts: it inherits it)."""
    d = tmp_path_factory.mktemp(name)
    log = BuildLog(str(d / "builds.log"))
    old = os.environ.get("AIRLOCK_BUILD_LOG")
    os.environ["AIRLOCK_BUILD_LOG"] = log.path
    try:
        daemon = sandbox_daemon(d, **kw).start()
    finally:
        if old is None:
            os.environ.pop("AIRLOCK_BUILD_LOG", None)
        else:
            os.environ["AIRLOCK_BUILD_LOG"] = old
    return daemon, log


def run(daemon, req, timeout=180):
    st, _, body = daemon.run(req, timeout=timeout)
    assert st == 200, body
    return body
