"""Workspaces and input bundles (docs/workspaces.md): input files arrive
with their exact bytes and modes (sh and python; sandbox with a bind or a
bounded tmpfs, and local), the code is read-only to the program, a
request contradicting its own workspace grant is invalid, a workspace
filled to its limit gives ENOSPC inside while the run completes, and the
python report example works end to end through the CLI."""
import json
import os

import pytest

from test_workspace_support import (artifact, cli, file_entry, need_provider,
                                    outputs_by_path, provider, result_of,
                                    run_request, sha256)

assert provider  # the fixture, imported for its parametrisation

INPUTS = [
    ("data/in.csv", b"a,b\n1,2\n", "0640"),
    ("bin/tool.sh", b"#!/bin/sh\necho tool\n", "0755"),
    ("blob.bin", bytes(range(256)) + b"\0\xff", "0600"),
    ("deep/er/still/ro.txt", b"read only\n", "0400"),
]

SH_REPORT = r"""
for f in data/in.csv bin/tool.sh blob.bin deep/er/still/ro.txt; do
  printf '%s %s %s\n' "$f" "$(stat -c %a "$f")" "$(sha256sum < "$f" | cut -d' ' -f1)"
done
./bin/tool.sh
"""

PY_REPORT = r"""
import hashlib, os, stat
for f in ["data/in.csv", "bin/tool.sh", "blob.bin", "deep/er/still/ro.txt"]:
    st = os.lstat(f)
    assert stat.S_ISREG(st.st_mode)
    print(f, "%o" % (st.st_mode & 0o777),
          hashlib.sha256(open(f, "rb").read()).hexdigest())
"""


def expected_lines():
    return ["%s %o %s" % (p, int(m, 8), sha256(d)) for p, d, m in INPUTS]


@pytest.mark.parametrize("lang", ["sh", "python"])
@pytest.mark.parametrize("provider,bounded", [
    ("sandbox", False), ("sandbox", True), ("local", False)])
def test_inputs_arrive_with_bytes_and_modes(state_dir, tmp_path, provider,
                                            lang, bounded):
    need_provider(provider, lang,
                  limit="workspace_bytes" if bounded else None)
    req = {"language": lang, "code": SH_REPORT if lang == "sh" else PY_REPORT,
           "files": [file_entry(p, d, m) for p, d, m in INPUTS],
           "grant": {"workspace": "rw"}}
    if bounded:
        req["limits"] = {"workspace_bytes": 1 << 20}
    res = run_request(state_dir, provider, req, tmp_path)
    assert res["outcome"] == "completed", res
    lines = res["stdout"].splitlines()
    assert lines[:4] == expected_lines()
    if lang == "sh":
        assert lines[4] == "tool"


@pytest.mark.parametrize("lang,code", [
    ("sh", "echo x > /code/main.sh; echo rc=$?; chmod 777 /code/main.sh;"
           " echo rc=$?; rm -f /code/main.sh; echo rc=$?; cat /code/main.sh"
           " | head -c 4"),
    ("python", "import os\n"
               "for f in (lambda: open('/code/main.py', 'a'),"
               " lambda: os.chmod('/code/main.py', 0o777),"
               " lambda: os.unlink('/code/main.py'),"
               " lambda: open('/code/new.py', 'w')):\n"
               "    try:\n        f(); print('WROTE')\n"
               "    except OSError as e:\n        print(e.errno)\n"),
])
def test_code_is_read_only_in_the_sandbox(state_dir, tmp_path, lang, code):
    need_provider("sandbox", lang)
    res = run_request(state_dir, "sandbox", {"language": lang, "code": code,
                                             "grant": {"workspace": "rw"}},
                      tmp_path)
    assert res["outcome"] == "completed", res
    assert "WROTE" not in res["stdout"]
    if lang == "sh":
        assert "rc=0" not in res["stdout"]
        assert res["stdout"].endswith("echo")  # the code is unchanged
        assert "Read-only file system" in res["stderr"]
    else:
        # EROFS from the read-only bind, or EACCES from Landlock first
        errs = res["stdout"].split()
        assert len(errs) == 4 and set(errs) <= {"13", "30"}, errs


def test_code_is_read_only_to_a_local_program_by_mode(state_dir, tmp_path):
    """The local provider runs as the caller: the code is 0444 in a 0555
    directory (a root program can still override that; docs)."""
    res = run_request(state_dir, "local", {
        "language": "sh",
        "code": "stat -c '%a' \"$0\" \"$(dirname \"$0\")\""}, tmp_path)
    assert res["outcome"] == "completed", res
    assert res["stdout"].split() == ["444", "555"]


def test_read_only_workspace_grant(state_dir, tmp_path):
    need_provider("sandbox")
    res = run_request(state_dir, "sandbox", {
        "language": "sh", "code": "cat in.txt; echo x > in.txt; echo x > new",
        "files": [file_entry("in.txt", b"hi\n")],
        "grant": {"workspace": "ro"}}, tmp_path)
    assert res["outcome"] == "failed" and res["stdout"] == "hi\n", res
    assert res["stderr"].count("Read-only file system") == 2


@pytest.mark.parametrize("request_part,reason", [
    ({"files": [{"path": "in.txt", "content": "x"}]}, "files"),
    ({"files": [{"path": "in.txt", "content": "x"}],
      "grant": {"workspace": "none"}}, "files"),
    ({"outputs": ["out.txt"], "grant": {"workspace": "ro"}}, "outputs"),
    ({"outputs": ["out.txt"]}, "outputs"),
    ({"files": [{"path": "../in.txt", "content": "x"}],
      "grant": {"workspace": "rw"}}, "files[0].path"),
    ({"files": [{"path": "/etc/in.txt", "content": "x"}],
      "grant": {"workspace": "rw"}}, "files[0].path"),
])
def test_requests_the_workspace_cannot_hold(state_dir, tmp_path, provider,
                                            request_part, reason):
    req = {"language": "sh", "code": "echo RAN"}
    req.update(request_part)
    res = run_request(state_dir, provider, req, tmp_path)
    assert res["outcome"] == "invalid_request", res
    assert res["reason"] == reason
    assert res["exit_code"] is None and "RAN" not in res["stdout"]


def test_workspace_filled_to_its_limit(state_dir, tmp_path):
    """ENOSPC inside the bounded workspace; the program goes on, completes,
    and what it declared is still collected."""
    need_provider("sandbox", limit="workspace_bytes")
    res = run_request(state_dir, "sandbox", {
        "language": "sh",
        "code": "echo small > small.txt; "
                "head -c 3000000 /dev/zero > fill; echo rc=$?; "
                "echo more >> small.txt; echo still=$?; exit 0",
        "limits": {"workspace_bytes": 1 << 20},
        "outputs": ["small.txt", "fill"],
        "grant": {"workspace": "rw"}}, tmp_path)
    assert res["outcome"] == "completed", res
    assert "rc=1" in res["stdout"]
    assert "No space left on device" in res["stderr"]
    out = outputs_by_path(res)
    assert out["small.txt"]["artifact"] is not None
    assert out["fill"]["artifact"] is not None
    assert out["fill"]["size"] <= 1 << 20
    data = artifact(state_dir, res["run_id"], out["fill"]["artifact"])
    assert sha256(data) == out["fill"]["sha256"]


REPORT_PY = """import csv, json, os
rows = list(csv.DictReader(open("data/in.csv")))
os.makedirs("out", exist_ok=True)
with open("out/report.json", "w") as f:
    json.dump({"rows": len(rows), "total": sum(int(r["n"]) for r in rows)}, f)
print("done")
"""


def test_python_report_end_to_end_through_the_cli(state_dir, tmp_path,
                                                  provider):
    """data/in.csv in, out/report.json out, with the CLI's --file,
    --output and --outputs-dir."""
    need_provider(provider, "python")
    (tmp_path / "in.csv").write_text("name,n\na,1\nb,2\nc,39\n")
    (tmp_path / "report.py").write_text(REPORT_PY)
    outdir = tmp_path / "results"
    outdir.mkdir()
    args = ["run", "-p", provider, "--json", str(tmp_path / "report.py"),
            "--file", str(tmp_path / "in.csv") + ":data/in.csv",
            "--output", "out/report.json", "--outputs-dir", str(outdir)]
    if provider == "local":
        args += ["--network", "host"]
    p = cli(state_dir, provider, *args)
    res = result_of(p)
    assert res["outcome"] == "completed", res
    assert p.returncode == 0, p.stderr
    written = (outdir / "out" / "report.json").read_bytes()
    assert json.loads(written) == {"rows": 3, "total": 42}
    o = outputs_by_path(res)["out/report.json"]
    assert o["sha256"] == sha256(written) and o["size"] == len(written)
    # the run's combined output is kept as the "log" artifact
    assert artifact(state_dir, res["run_id"], "log") == b"done\n"
    # a second run never replaces what is there
    p = cli(state_dir, provider, *args)
    assert p.returncode == 125
    assert b"exists already" in p.stderr
    assert (outdir / "out" / "report.json").read_bytes() == written


def test_outputs_dir_never_followed_through_a_link(state_dir, tmp_path):
    need_provider("sandbox")
    victim = tmp_path / "victim"
    victim.mkdir()
    outdir = tmp_path / "results"
    outdir.mkdir()
    os.symlink(str(victim), str(outdir / "out"))
    p = cli(state_dir, "sandbox", "run", "-p", "sandbox", "-l", "sh", "-e",
            "mkdir out; echo hi > out/x.txt", "--output", "out/x.txt",
            "--outputs-dir", str(outdir))
    assert p.returncode == 125, p.stderr
    assert os.listdir(str(victim)) == []


DEEP_PY = """import os
for i in range(3000):
    os.mkdir("d")
    os.chdir("d")
    if i % 700 == 0:
        os.symlink("/etc", "etc")
        os.mkdir("locked"); os.chmod("locked", 0)
print("deep")
"""


def test_a_deep_hostile_tree_is_removed(state_dir, tmp_path, provider):
    """A workspace 3000 directories deep (links and unreadable directories
    on the way) is removed after the run without following a link and
    without running out of descriptors (the CLI gets 512: one descriptor
    per level would run out); the run is not an error."""
    need_provider(provider, "python")
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o700)
    res = run_request(state_dir, provider, {
        "language": "python", "code": DEEP_PY,
        "limits": {"wall_ms": 30000}, "grant": {"workspace": "rw"}},
        tmp_path, timeout=120, env={"AIRLOCK_RUN_BASE": str(runs)},
        nofile=512)
    assert res["outcome"] == "completed" and res["stdout"] == "deep\n", res
    assert os.listdir(str(runs)) == []
    assert os.path.isdir("/etc") and os.listdir("/etc")
