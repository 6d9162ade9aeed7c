"""The container provider's images (docs/containers.md, "Images"): a
Debian root built with mmdebstrap (once per session: about 20 s), an OCI
layout imported with umoci, both listed with their content digest, run
as the container's read-only root; a request may name only an image on
its tenant's allow-list, and never a path."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import BIN

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the container provider runs as root")


def cli(state, *args, config=None, timeout=300):
    cmd = [BIN, "--state-dir", str(state)]
    if config:
        cmd += ["--config", str(config)]
    return subprocess.run(cmd + list(args), capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """A state directory with one image built by mmdebstrap: the extract
    variant with dash (about 10 s; minbase takes 20 s or more)."""
    for tool in ("mmdebstrap", "umoci", "runc"):
        assert shutil.which(tool) or shutil.which(tool, path="/usr/sbin"), \
            f"{tool} is not installed (scripts/install-deps.sh)"
    state = tmp_path_factory.mktemp("image-state")
    os.chmod(state, 0o700)
    r = cli(state, "image", "build", "deb", "--variant", "extract",
            "--packages", "dash,base-files,libc6")
    assert r.returncode == 0, r.stderr
    name, digest = r.stdout.split()
    assert name == "deb" and digest.startswith("sha256:")
    return state, digest[7:]


def config(tmp_path, state, images):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({
        "providers": [{"provider": "container",
                       "config": {"images_dir": str(state / "images")}}],
        "tenants": {"default": {"languages": "*", "images": images}}}))
    return p


def run_request(state, cfg, req, provider="container"):
    f = state / "req.json"
    f.write_text(json.dumps(req))
    r = cli(state, "run", "-p", provider, "--request", str(f), "--json",
            config=cfg)
    return json.loads(r.stdout)


def test_build_lists_the_digest_and_runs_as_root_fs(store, tmp_path):
    state, digest = store
    r = cli(state, "image", "list", "--json")
    assert {"name": "deb", "digest": digest} in json.loads(r.stdout)
    tree = state / "images" / digest / "rootfs"
    assert (tree / "etc" / "debian_version").exists()
    cfg = config(tmp_path, state, ["deb"])
    probe = json.loads(cli(state, "probe", "-p", "container", "--json",
                           config=cfg).stdout)
    assert {"name": "deb", "digest": digest} in probe["mechanism"]["images"]
    res = run_request(state, cfg, {
        "language": "sh", "image": "deb",
        "code": "read v < /etc/debian_version; echo $v; "
                "test -e /usr/bin/python3 && echo HOST-USR; "
                "(: > /etc/x) 2>/dev/null && echo RW; echo ok"})
    assert res["outcome"] == "completed", res
    out = res["stdout"].splitlines()
    assert out[-1] == "ok" and "HOST-USR" not in out and "RW" not in out
    # runs never change a stored image
    assert (state / "images" / digest / "rootfs").exists()
    r = cli(state, "image", "list")
    assert r.stdout.split() == ["deb", "sha256:" + digest]


def test_import_of_an_oci_layout(store, tmp_path):
    state, digest = store
    layout = tmp_path / "layout"
    bundle = tmp_path / "bundle"

    def umoci(*a):
        subprocess.run(["umoci", *a], check=True, capture_output=True)
    umoci("init", "--layout", str(layout))
    umoci("new", "--image", f"{layout}:v1")
    umoci("unpack", "--image", f"{layout}:v1", str(bundle))
    # the built image's tree as the layer's content
    src = state / "images" / digest / "rootfs"
    subprocess.run(["cp", "-a", f"{src}/.", str(bundle / "rootfs")],
                   check=True)
    umoci("repack", "--image", f"{layout}:v1", str(bundle))
    r = cli(state, "image", "import", "imp", f"{layout}:v1")
    assert r.returncode == 0, r.stderr
    name, idigest = r.stdout.split()
    # the same tree, the same digest, however it came
    r2 = cli(state, "image", "import", "imp2", f"{layout}:v1")
    assert r2.stdout.split()[1] == idigest
    names = {i["name"]: i["digest"] for i in
             json.loads(cli(state, "image", "list", "--json").stdout)}
    assert names["imp"] == names["imp2"] == idigest[7:]
    cfg = config(tmp_path, state, ["imp"])
    res = run_request(state, cfg, {"language": "sh", "image": "imp",
                                   "code": "read v < /etc/debian_version; "
                                           "echo $v"})
    assert res["outcome"] == "completed", res
    assert res["stdout"].strip()[:2].isdigit()


def test_an_image_off_the_allow_list_is_denied(store, tmp_path):
    state, _ = store
    cfg = config(tmp_path, state, ["something-else"])
    res = run_request(state, cfg, {"language": "sh", "image": "deb",
                                   "code": "echo ran"})
    assert res["outcome"] == "denied" and res["reason"] == "gate:image"
    assert res["stdout"] == ""


@pytest.mark.parametrize("name", ["../images", "/usr", "a/b", ".hidden"])
def test_an_image_is_a_name_never_a_path(store, tmp_path, name):
    state, _ = store
    cfg = config(tmp_path, state, ["deb"])
    res = run_request(state, cfg, {"language": "sh", "image": name,
                                   "code": "echo ran"})
    assert res["outcome"] == "invalid_request" and res["reason"] == "image"


def test_an_image_request_never_runs_elsewhere(store, tmp_path):
    state, _ = store
    cfg = config(tmp_path, state, ["deb"])
    res = run_request(state, cfg, {"language": "sh", "image": "deb",
                                   "code": "echo ran"}, provider="sandbox")
    assert res["outcome"] == "unenforceable_limit"
    assert res["reason"] == "image"
