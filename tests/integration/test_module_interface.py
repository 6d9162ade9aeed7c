"""The network modules call the airlock binary only through the table
src/netmod/host_api.h declares, and the binary exports only the public
API (docs/install.md, "The library's ABI")."""
import os
import re
import subprocess

AIRLOCK_BIN = os.environ.get("AIRLOCK_BIN", "build/airlock")
BUILD = os.path.dirname(os.path.abspath(AIRLOCK_BIN))
MODULES = {
    "libairlock-net.so": {"al_net_module_bind", "al_server_run",
                          "al_store_audit_verify"},
    "libairlock-remote.so": {"al_net_module_bind",
                             "al_remote_provider_module",
                             "al_tool_webhook_post", "al_ct_docker_engine"},
}


def nm(*args):
    return subprocess.run(["nm", "-D", *args], capture_output=True,
                          check=True, text=True).stdout


def names(out, skip_weak=False):
    found = set()
    for ln in out.splitlines():
        parts = ln.split()
        if not parts or (skip_weak and parts[-2] in ("w", "v")):
            continue
        found.add(parts[-1].split("@")[0])
    return found


def needed_libraries(path):
    out = subprocess.run(["ldd", path], capture_output=True, check=True,
                         text=True).stdout
    # the libraries, and the dynamic loader itself (__tls_get_addr)
    return re.findall(r"(?:=> |^\s*)(/\S+)", out, re.M)


def test_modules_reference_only_their_libraries():
    for mod in MODULES:
        path = os.path.join(BUILD, mod)
        undefined = names(nm("--undefined-only", path), skip_weak=True)
        assert undefined, mod
        provided = set()
        for lib in needed_libraries(path):
            provided |= names(nm("--defined-only", lib))
        assert undefined - provided == set(), mod


def test_modules_export_only_their_entries():
    for mod, entries in MODULES.items():
        exported = names(nm("--defined-only", os.path.join(BUILD, mod)))
        assert exported == entries, mod


def test_binary_exports_only_the_public_api():
    public = set(re.findall(r"^\s+(al_[a-z0-9_]+);",
                            open(os.path.join(BUILD, "libairlock.map")).read(),
                            re.M))
    out = nm("--defined-only", AIRLOCK_BIN)
    # libc's data the binary copies (stdin) is versioned; everything the
    # binary itself exports is not.  Its static jansson is exported too, so
    # the modules share that one copy (Makefile, CLI_DYNLIST).
    exported = {ln.split()[-1] for ln in out.splitlines()
                if ln.strip() and "@" not in ln}
    assert "al_facts_new" in exported and "json_object_get" in exported
    assert "al_sandbox_idle_targets" not in exported  # the table's
    ours = {n for n in exported if not n.startswith("json")}
    assert ours <= public, ours - public


def test_an_idle_daemon_maps_no_optional_library(tmp_path):
    """libpq (a postgresql:// store), libzip (Judge0's additional_files)
    and libcurl (the remote provider) are opened only when used: an idle
    daemon without them maps none, nor the OpenSSL they bring (its idle
    RSS, docs/performance.md)."""
    from test_api_support import Daemon, local_config
    d = Daemon(tmp_path, local_config()).start()
    try:
        with open("/proc/%d/maps" % d.proc.pid) as f:
            maps = f.read()
    finally:
        d.stop()
    assert "libairlock-net.so" in maps  # the daemon is the one looked at
    for lib in ("libpq.so", "libzip.so", "libcurl.so", "libcrypto.so"):
        assert lib not in maps, lib
