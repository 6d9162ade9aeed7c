"""`make install` into a DESTDIR, then each installed piece checked with the
tool that consumes it: man(1) renders the pages, pkg-config compiles and
runs a program against the installed library and headers, nm shows only
the public al_ functions exported, systemd-analyze verifies the unit, the
unit's capability bounding set runs a real sandbox, the installed CLI loads
its modules from the installed module directory, the shell completions
load (docs/install.md).

The installed tree is run where it was meant to live (/usr/local) inside
a private mount namespace with DESTDIR/usr/local bound over /usr/local, so
the compiled-in module directory and the unit's paths are the real ones
and nothing on the machine changes.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BIN

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PREFIX = "/usr/local"
MODULEDIR = PREFIX + "/lib/airlock"
IS_ROOT = os.geteuid() == 0


def make(args):
    """`make -s -C REPO ARGS`, the build directory of the tests' binary,
    without a parent make's flags (a `make integration` jobserver)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    cmd = ["make", "-s", "-C", REPO] + list(args)
    if build_dir() is not None:
        cmd.append("BUILD=" + build_dir())
    p = subprocess.run(cmd, capture_output=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr.decode(errors="replace")


def build_dir():
    """The build directory the tests' binary came from (make's BUILD)."""
    d = os.path.dirname(os.path.abspath(BIN))
    return d if os.path.exists(os.path.join(d, "libairlock.so")) else None


@pytest.fixture(scope="module")
def dest(tmp_path_factory):
    d = tmp_path_factory.mktemp("destdir") / "root"
    make(["install", "DESTDIR=" + str(d)])
    return str(d)


def inst(dest, path):
    return dest + path


def in_prefix_ns(dest, argv):
    """argv run in a private mount namespace where DESTDIR/usr/local is
    /usr/local (exec'd: the returned command's pid is argv's)."""
    if not IS_ROOT or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to mount the installed tree "
                    "at " + PREFIX)
    return ["unshare", "--mount", "--propagation", "private", "--", "sh",
            "-c", 'mount --bind "$0/usr/local" /usr/local && exec "$@"',
            dest] + list(argv)


# The unit's writable places under ProtectSystem=strict (StateDirectory is
# the test's own state directory instead of /var/lib/airlock).
UNIT_RW = ["/run/airlock", "/var/cache/airlock"]


def in_unit_ns(dest, state, argv):
    """argv as in_prefix_ns, and with / read-only but for the unit's
    runtime and cache directories and `state`: ProtectSystem=strict's
    view (/dev, /proc, /sys are mounts of their own and stay writable)."""
    for d, mode in zip(UNIT_RW, (0o755, 0o700)):
        # what airlock itself creates on a root run; the unit's
        # RuntimeDirectory= and CacheDirectory= do it under systemd
        os.makedirs(d, mode=mode, exist_ok=True)
    ns = in_prefix_ns(dest, [])
    script = ('mount --bind "$0/usr/local" /usr/local && '
              'for d in ' + " ".join(UNIT_RW) + ' "$1"; do '
              'mount --bind "$d" "$d" || exit 1; done && '
              'mount -o remount,bind,ro / && '
              'mount -o remount,bind,ro /usr/local && shift && exec "$@"')
    return ns[:ns.index("-c") + 1] + [script, dest, str(state)] + list(argv)


def cli_commands():
    """The subcommands `airlock --help` lists."""
    out = subprocess.run([BIN, "--help"], capture_output=True,
                         timeout=30).stdout.decode()
    block = out.split("commands:", 1)[1].split("\n\n", 1)[0]
    cmds = [line.split()[0] for line in block.splitlines() if line.strip()]
    assert "run" in cmds and "serve" in cmds, out
    return cmds


# ---- layout ---------------------------------------------------------------

def test_layout_and_soname(dest):
    for rel in ["/bin/airlock", "/lib/airlock/libairlock-net.so",
                "/lib/airlock/libairlock-remote.so", "/lib/libairlock.a",
                "/lib/libairlock-contract.a", "/lib/pkgconfig/airlock.pc",
                "/lib/systemd/system/airlockd.service",
                "/include/airlock/airlock.h", "/include/airlock/server.h",
                "/share/man/man1/airlock.1", "/share/man/man5/airlock-config.5",
                "/share/man/man8/airlockd.8",
                "/share/bash-completion/completions/airlock",
                "/share/zsh/site-functions/_airlock"]:
        assert os.path.isfile(inst(dest, PREFIX + rel)), rel
    headers = sorted(os.listdir(os.path.join(REPO, "include", "airlock")))
    assert sorted(os.listdir(inst(dest, PREFIX + "/include/airlock"))) == \
        headers

    lib = inst(dest, PREFIX + "/lib")
    real = [f for f in os.listdir(lib)
            if re.fullmatch(r"libairlock\.so\.\d+\.\d+\.\d+", f)]
    assert len(real) == 1, os.listdir(lib)
    major = real[0].split(".")[2]
    soname = "libairlock.so." + major
    assert os.readlink(os.path.join(lib, soname)) == real[0]
    assert os.readlink(os.path.join(lib, "libairlock.so")) == soname
    dyn = subprocess.run(["readelf", "-d", os.path.join(lib, real[0])],
                         capture_output=True, check=True).stdout.decode()
    assert "Library soname: [%s]" % soname in dyn

    # The default configuration is strict JSON with the sandbox alone.
    with open(inst(dest, "/etc/airlock/config.json")) as f:
        cfg = json.load(f)
    assert cfg["providers"] == ["sandbox"]
    assert cfg["trusted_provider_acknowledged"] is False


def test_installed_config_is_kept(dest):
    """A second install never replaces an operator's configuration."""
    path = inst(dest, "/etc/airlock/config.json")
    with open(path) as f:
        original = f.read()
    edited = original.replace('"concurrency": 4', '"concurrency": 3')
    assert edited != original
    with open(path, "w") as f:
        f.write(edited)
    try:
        make(["install", "DESTDIR=" + dest])
        with open(path) as f:
            assert f.read() == edited
    finally:
        with open(path, "w") as f:
            f.write(original)


# ---- man pages ------------------------------------------------------------

@pytest.mark.parametrize("page", ["man1/airlock.1", "man5/airlock-config.5",
                                  "man8/airlockd.8"])
def test_man_page_renders(dest, page):
    path = inst(dest, PREFIX + "/share/man/" + page)
    env = dict(os.environ, MANWIDTH="80")
    p = subprocess.run(["man", "-l", path], capture_output=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stderr == b"", p.stderr.decode()  # no groff warning
    text = re.sub(r".\x08", "", p.stdout.decode())  # overstrike bold
    for section in ("NAME", "DESCRIPTION", "SEE ALSO"):
        assert re.search(r"^" + section + r"$", text, re.M), section
    if page == "man1/airlock.1":
        # a section for every subcommand the CLI has
        for cmd in cli_commands():
            assert re.search(r"^   " + cmd + r"$", text, re.M), cmd


# ---- library: pkg-config, exported symbols ---------------------------------

PROGRAM = r"""
#include <airlock/airlock.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	al_config *cfg = NULL;
	al_error *err = NULL;
	if (al_config_default(&cfg, &err) != 0)
		return 2;
	al_config_free(cfg);
	printf("%s %s\n", al_version(), al_outcome_name(AL_OUTCOME_COMPLETED));
	return strcmp(al_version(), AIRLOCK_VERSION) != 0;
}
"""


@pytest.mark.not_under_san(
    "a program linked against the ASan-built library needs the "
    "ASan runtime loaded first; the plain build's run checks the "
    "packaging")
def test_pkg_config_builds_and_runs_a_program(dest, tmp_path):
    env = dict(os.environ,
               PKG_CONFIG_PATH=inst(dest, PREFIX + "/lib/pkgconfig"),
               PKG_CONFIG_SYSROOT_DIR=dest)
    env.pop("PKG_CONFIG_LIBDIR", None)

    def pc(*args):
        p = subprocess.run(["pkg-config"] + list(args) + ["airlock"],
                           capture_output=True, env=env, timeout=30)
        assert p.returncode == 0, p.stderr.decode()
        return p.stdout.decode().split()

    version = pc("--modversion")[0]
    flags = pc("--cflags", "--libs")
    assert "-I" + inst(dest, PREFIX + "/include") in flags
    assert "-L" + inst(dest, PREFIX + "/lib") in flags
    src = tmp_path / "prog.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "prog"
    p = subprocess.run(["cc", "-std=c17", "-Wall", "-Wextra", "-Werror",
                        str(src), "-o", str(exe)] + flags +
                       ["-Wl,-rpath," + inst(dest, PREFIX + "/lib")],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    p = subprocess.run([str(exe)], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode() == version + " completed\n"
    # it runs against the installed shared library, through its SONAME
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True,
                         timeout=30).stdout.decode()
    assert re.search(r"libairlock\.so\.\d+ => " +
                     re.escape(inst(dest, PREFIX + "/lib/")), ldd), ldd


def header_functions():
    """Every al_ name the public headers declare as a function, comments
    stripped first."""
    names = set()
    hdir = os.path.join(REPO, "include", "airlock")
    for h in os.listdir(hdir):
        with open(os.path.join(hdir, h)) as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        names |= set(re.findall(r"\b(al_[a-z0-9_]+)\s*\(", text))
    return names


def defined_symbols(path, dynamic):
    args = ["nm", "--defined-only"] + (["-D"] if dynamic else ["-g"])
    out = subprocess.run(args + [path], capture_output=True, check=True,
                         timeout=60).stdout.decode()
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2].split("@")[0]] = parts[1]
    return syms


def test_only_public_functions_exported(dest):
    lib = inst(dest, PREFIX + "/lib/libairlock.so")
    exported = {n for n, t in defined_symbols(lib, True).items()
                if t != "A"}  # "A": the version node's name
    everything = set(defined_symbols(inst(dest, PREFIX + "/lib/libairlock.a"),
                                     False))
    public = header_functions()
    # exactly the declared functions the library defines...
    assert exported == public & everything
    # ...and not the internal al_ ones (sandbox, server, host modules)
    internal = {n for n in everything
                if n.startswith(("al_sb_", "al_srv_"))}
    assert internal, "expected internal al_sb_/al_srv_ functions in the .a"
    assert not exported & internal
    assert "al_version" in exported and "al_host_run" in exported


# ---- systemd unit ----------------------------------------------------------

def unit_text(dest):
    with open(inst(dest, PREFIX + "/lib/systemd/system/airlockd.service")) as f:
        return f.read()


def unit_settings(dest):
    settings = {}
    for line in unit_text(dest).splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            settings.setdefault(k.strip(), v.strip())
    return settings


def test_unit_directives(dest):
    s = unit_settings(dest)
    assert s["ExecStart"].startswith(PREFIX + "/bin/airlock ")
    assert s["ExecStart"].endswith(" serve")
    assert "--config /etc/airlock/config.json" in s["ExecStart"]
    assert s["Delegate"] == "yes"
    assert s["StateDirectory"] == "airlock"
    assert s["StateDirectoryMode"] == "0700"
    assert s["CacheDirectory"] == "airlock"
    assert s["RuntimeDirectory"] == "airlock"
    assert s["NoNewPrivileges"] == "yes"
    assert s["ProtectSystem"] == "strict"
    # The sandbox creates namespaces and sets the run's hostname.
    for absent in ("RestrictNamespaces", "ProtectHostname",
                   "SystemCallFilter", "MemoryDenyWriteExecute",
                   "PrivateUsers", "PrivateNetwork"):
        assert absent not in s, absent


def test_systemd_analyze_verify(dest):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.fail("systemd-analyze is not installed: run "
                    "scripts/install-deps.sh (Debian's systemd)")
    unit = PREFIX + "/lib/systemd/system/airlockd.service"
    p = subprocess.run(in_prefix_ns(dest, [tool, "verify", unit]),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert b"airlockd.service" not in p.stderr, p.stderr.decode()


def test_unit_capabilities_run_the_sandbox(dest, tmp_path):
    """The unit's CapabilityBoundingSet with NoNewPrivileges, on a
    read-only root with only the unit's writable directories, is enough
    for real sandbox runs with the installed configuration: a workspace
    with an input file, loopback, and a timeout whose TERM reaches the
    program (CAP_KILL: the program runs as another uid)."""
    if not IS_ROOT or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv(1)")
    caps = unit_settings(dest)["CapabilityBoundingSet"].split()
    assert caps and all(c.startswith("CAP_") for c in caps)
    bounding = "-all," + ",".join("+" + c[4:].lower() for c in caps)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (tmp_path / "in.txt").write_text("input\n")
    base = ["setpriv", "--bounding-set=" + bounding, "--no-new-privs",
            PREFIX + "/bin/airlock", "--state-dir", str(state), "--config",
            inst(dest, "/etc/airlock/config.json"), "run", "--json",
            "-p", "sandbox"]
    env = dict(os.environ)
    env.pop("AIRLOCK_CONFIG", None)

    view = subprocess.run(
        in_unit_ns(dest, state, ["sh", "-c", "for d in /etc /var/lib /usr "
                                 "/run/airlock /var/cache/airlock " +
                                 str(state) + "; do test -w $d && echo "
                                 "$d; done"]),
        capture_output=True, timeout=60)
    assert view.stdout.decode().split() == UNIT_RW + [str(state)], view

    def run(*args):
        p = subprocess.run(in_unit_ns(dest, state, base + list(args)),
                           capture_output=True, timeout=60, env=env,
                           cwd=str(tmp_path))
        out = p.stdout.decode()
        assert out.strip(), p.stderr.decode()
        return json.loads(out)

    r = run("-l", "sh", "--network", "loopback", "--file", "in.txt",
            "--workspace", "rw", "-e",
            "cat in.txt && echo out > written && id -u")
    assert r["outcome"] == "completed", r
    assert r["stdout"].split() == ["input", "0"], r

    r = run("-l", "sh", "-t", "300ms", "-e",
            "trap 'echo got-term; exit 0' TERM; while :; do :; done")
    assert r["outcome"] == "timed_out", r
    assert "got-term" in r["stdout"], r


# ---- the installed CLI and its modules --------------------------------------

def test_installed_cli_finds_its_modules(dest, tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    cli = [PREFIX + "/bin/airlock", "--state-dir", str(state), "--config",
           inst(dest, "/etc/airlock/config.json")]
    env = dict(os.environ)
    env.pop("AIRLOCK_NET_MODULE", None)
    env.pop("AIRLOCK_REMOTE_MODULE", None)

    # probe: the remote provider's module loads (its reason, if it is
    # unavailable, is never the module)
    p = subprocess.run(in_prefix_ns(dest, cli + ["probe", "--json"]),
                       capture_output=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr.decode()
    text = p.stdout.decode()
    assert '"remote"' in text and "sandbox" in text
    assert "libairlock-remote.so" not in text, text

    # serve: the network module is mapped from the installed directory
    log = tmp_path / "serve.log"
    with open(log, "wb") as lf:
        proc = subprocess.Popen(
            in_prefix_ns(dest, cli + ["serve", "--listen", "127.0.0.1:0"]),
            stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env)
    try:
        deadline = time.monotonic() + 20
        while "listening on" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        with open("/proc/%d/maps" % proc.pid) as f:
            maps = f.read()
        assert MODULEDIR + "/libairlock-net.so" in maps
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log.read_text(errors="replace")


# ---- shell completion ------------------------------------------------------

def test_bash_completion_loads(dest):
    f = inst(dest, PREFIX + "/share/bash-completion/completions/airlock")
    script = ('source "$1"; complete -p airlock; '
              'COMP_WORDS=(airlock ""); COMP_CWORD=1; _airlock; '
              'echo "${COMPREPLY[*]}"; '
              'COMP_WORDS=(airlock run --network ""); COMP_CWORD=3; '
              '_airlock; echo "${COMPREPLY[*]}"')
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "x",
                        f], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr.decode()
    lines = p.stdout.decode().splitlines()
    assert lines[0] == "complete -F _airlock airlock"
    assert set(cli_commands()) <= set(lines[1].split())
    assert lines[2].split() == ["none", "loopback", "host"]


def test_zsh_completion_loads(dest):
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.fail("zsh is not installed: run scripts/install-deps.sh "
                    "(Debian's zsh)")
    d = inst(dest, PREFIX + "/share/zsh/site-functions")
    p = subprocess.run([zsh, "-f", "-c",
                        'fpath=("$1" $fpath); autoload -Uz compinit; '
                        'compinit -u -D; print -r -- "$_comps[airlock]"',
                        "x", d], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().strip() == "_airlock"


# ---- uninstall ---------------------------------------------------------------

def test_uninstall_keeps_configuration(tmp_path):
    d = tmp_path / "root"
    make(["install", "DESTDIR=" + str(d)])
    make(["uninstall", "DESTDIR=" + str(d)])
    left = sorted(str(f.relative_to(d)) for f in d.rglob("*") if f.is_file())
    assert left == ["etc/airlock/config.json"]
