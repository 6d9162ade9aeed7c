"""The sandbox's observation cache (docs/sandbox.md, "What the probe
checks"): the first probe of a boot observes, later ones read the verdicts
back; the file is ours alone; a cache that promises a mechanism the host no
longer has makes the run fail closed and is dropped."""
import json
import os
import shutil
import stat
import subprocess

import pytest

from sandbox_helpers import BIN, config_file, facts, need

# One file per key: -m- the mechanism and cgroup verdicts, -l- the
# languages' inside runs.
MECH = "sandbox-facts-m-"
LANG = "sandbox-facts-l-"


def cache_files(d, prefix):
    return sorted(p for p in d.iterdir()
                  if p.name.startswith(prefix) and p.name.endswith(".json"))


def mech_file(d):
    files = cache_files(d, MECH)
    assert len(files) == 1, files
    return files[0]


@pytest.fixture
def cache_env(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    env = dict(os.environ)
    env["AIRLOCK_CACHE_DIR"] = str(d)
    env.pop("AIRLOCK_CONFIG", None)
    return env, d


@pytest.fixture(scope="module")
def first_probe(tmp_path_factory):
    """One observation from an empty cache for the whole file: a probe
    that observes costs the full trials, and only
    test_first_probe_observes_then_cached needs to watch one happen.  The
    other tests start from a copy of the file it stored."""
    need()
    d = tmp_path_factory.mktemp("seed-cache")
    os.chmod(d, 0o700)
    env = dict(os.environ)
    env["AIRLOCK_CACHE_DIR"] = str(d)
    env.pop("AIRLOCK_CONFIG", None)
    f, m = probe(env)
    return d, f, m


@pytest.fixture
def seeded_env(cache_env, first_probe):
    """A private cache dir holding what the first probe stored, as if this
    test's own first probe had just run."""
    env, d = cache_env
    for f in cache_files(first_probe[0], "sandbox-facts-"):
        shutil.copyfile(f, d / f.name)
        os.chmod(d / f.name, 0o600)
    return env, d


def probe(env):
    p = subprocess.run([BIN, "probe", "-p", "sandbox", "--json"], env=env,
                       capture_output=True, text=True, timeout=120)
    f = json.loads(p.stdout)
    return f, f["mechanism"]


def run(env, *args):
    p = subprocess.run([BIN, "run", "-p", "sandbox", "--json", "-l", "sh"] +
                       list(args), env=env, capture_output=True, text=True,
                       timeout=60)
    return json.loads(p.stdout)


def test_first_probe_observes_then_cached(first_probe, seeded_env):
    seed, f1, m1 = first_probe
    m1 = dict(m1)
    assert m1["observed"] == "now"
    assert cache_files(seed, LANG), "the languages' inside runs are stored"
    for f in cache_files(seed, "sandbox-facts-"):
        st = os.stat(f)
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
        doc = json.loads(f.read_text())
        assert f.name.endswith("-" + doc["key"] + ".json")
    # a probe reading the stored file (a copy of it) answers from it
    env, d = seeded_env
    f2, m2 = probe(env)
    assert m2["observed"] == "cached_this_boot"
    # the cached verdicts are the observed ones
    for k in ("available", "limits", "languages", "network", "isolation"):
        assert f1[k] == f2[k], k
    m1.pop("observed"), m2.pop("observed")
    assert m1 == m2


def test_cache_others_can_write_is_ignored(seeded_env):
    env, d = seeded_env
    _, m = probe(env)
    assert m["observed"] == "cached_this_boot"  # the copy alone is trusted
    os.chmod(mech_file(d), 0o666)
    _, m = probe(env)
    assert m["observed"] == "now"


def test_cache_file_of_another_key_is_ignored(seeded_env):
    """A file renamed to another key's name is not that key's verdicts."""
    env, d = seeded_env
    f = mech_file(d)
    doc = json.loads(f.read_text())
    doc["key"] = "%064x" % 7
    f.write_text(json.dumps(doc))
    _, m = probe(env)
    assert m["observed"] == "now"


def mechanism_entries(d):
    """Keys holding mechanism verdicts (the languages' inside
    observations live in files of their own, keyed without cgroups)."""
    return len(cache_files(d, MECH))


def test_config_change_observes_again(seeded_env, tmp_path):
    env, d = seeded_env
    assert mechanism_entries(d) == 1
    cfg = config_file(tmp_path / "config.json", {"tmp_bytes": 1048576})
    p = subprocess.run([BIN, "--config", cfg, "run", "-l", "sh", "-e",
                        "df -k /tmp | tail -1"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.stdout.split()[1] == "1024", p
    # a second key: the trials ran again for the other config
    assert mechanism_entries(d) == 2


def test_other_builds_language_entries_do_not_evict_mechanisms(seeded_env):
    """A cache dir shared by many builds fills with their languages'
    entries; the mechanism entry a probe stores must survive the trim (it
    once did not, and every run re-observed: ~15 ms each)."""
    env, d = seeded_env
    inside = json.loads(cache_files(d, LANG)[0].read_text())
    mech_file(d).unlink()
    for i in range(20):
        key = "%064x" % (i + 1)
        f = d / (LANG + key + ".json")
        f.write_text(json.dumps(dict(inside, key=key)))
        os.chmod(f, 0o600)
    _, m = probe(env)
    assert m["observed"] == "now"
    _, m = probe(env)
    assert m["observed"] == "cached_this_boot"
    assert mechanism_entries(d) == 1
    assert len(cache_files(d, LANG)) <= 8


def test_vanished_mechanism_fails_closed_and_is_forgotten(seeded_env):
    """The cache says the memory controller works on the unified hierarchy,
    where this host has none: a run asking for a memory limit must be
    refused as unavailable (never run without the limit), and the next
    probe must observe again."""
    need(limit="memory_bytes")
    if facts()["mechanism"]["cgroup"]["memory"] != "v1":
        pytest.skip("sandbox facts: memory controller is not on v1, so no "
                    "cached verdict can name a hierarchy lacking it")
    env, d = seeded_env
    f = mech_file(d)
    doc = json.loads(f.read_text())
    doc["cgroups"]["memory"] = "v2"
    f.write_text(json.dumps(doc))
    _, m = probe(env)
    assert m["observed"] == "cached_this_boot"
    assert m["cgroup"]["memory"] == "v2"
    res = run(env, "-m", "64M", "-e", "echo RAN")
    assert res["outcome"] == "unavailable", res
    assert res["reason"] == "sandbox_unavailable"
    assert "RAN" not in (res.get("stdout") or "")
    assert not cache_files(d, "sandbox-facts-")
    _, m = probe(env)
    assert m["observed"] == "now" and m["cgroup"]["memory"] == "v1"
    assert run(env, "-m", "64M", "-e", "echo RAN")["stdout"] == "RAN\n"


def test_missing_cache_dir_is_made_private(tmp_path):
    """A cache directory that does not exist yet is made, 0700, with its
    parents (src/providers/registry.c), and holds the verdicts."""
    need()
    d = tmp_path / "a" / "b" / "cache"
    env = dict(os.environ, AIRLOCK_CACHE_DIR=str(d))
    env.pop("AIRLOCK_CONFIG", None)
    assert run(env, "-e", "true")["outcome"] == "completed"
    for p in (tmp_path / "a", tmp_path / "a" / "b", d):
        st = os.lstat(p)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert mech_file(d)


def test_cache_dir_behind_a_symlink_is_not_used(tmp_path):
    """A cache directory named through a symlink is no cache: the run
    goes on and writes nothing where the link points."""
    need()
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    env = dict(os.environ, AIRLOCK_CACHE_DIR=str(link))
    env.pop("AIRLOCK_CONFIG", None)
    assert run(env, "-e", "true")["outcome"] == "completed"
    assert list(real.iterdir()) == []
