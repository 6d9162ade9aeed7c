"""The container provider's Docker Engine variant (docs/containers.md,
"Docker"): a private dockerd started here (no bridge, no iptables, no
forwarding, its own data and exec roots and socket; stopped by its pid),
then hello world, the memory and pids limits binding, no network, and no
container left after a timeout or an interrupt."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import BIN

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the container provider runs as root")


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("docker", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def engine(sock, method, path):
    c = UnixHTTP(sock)
    c.request(method, "/v1.41" + path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, json.loads(body) if body else None


@pytest.fixture(scope="module")
def dockerd(tmp_path_factory):
    assert shutil.which("dockerd"), \
        "dockerd is not installed (scripts/install-deps.sh: docker.io)"
    d = tmp_path_factory.mktemp("dockerd")
    sock = str(d / "sock")
    log = open(d / "log", "wb")
    proc = subprocess.Popen(
        ["dockerd", "--bridge=none", "--iptables=false",
         "--ip-forward=false", "--ip6tables=false",
         "--data-root", str(d / "data"), "--exec-root", str(d / "exec"),
         "--pidfile", str(d / "pid"), "-H", "unix://" + sock,
         "--storage-driver=vfs"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if os.path.exists(sock):
                try:
                    if engine(sock, "GET", "/version")[0] == 200:
                        break
                except OSError:
                    pass
            assert proc.poll() is None, (d / "log").read_text()
            time.sleep(0.05)
        else:
            pytest.fail("dockerd did not answer: " + (d / "log").read_text())
        yield sock, d
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(d, ignore_errors=True)


def config(tmp_path, sock):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({
        "providers": [{"provider": "container",
                       "config": {"runtime": "docker",
                                  "docker_socket": sock}}],
        "tenants": {"default": {
            "languages": "*",
            "grant": {"network": ["none", "loopback"],
                      "workspace": ["none", "ro", "rw"],
                      "streaming": True}}}}))
    return str(p)


def run(tmp_path, sock, *args):
    r = subprocess.run([BIN, "--config", config(tmp_path, sock), "run",
                        "-p", "container", "--json", *args],
                       capture_output=True, text=True, timeout=120)
    return json.loads(r.stdout)


def no_containers(sock):
    st, lst = engine(sock, "GET", "/containers/json?all=1")
    return st == 200 and lst == []


def test_probe_and_hello_world(dockerd, tmp_path):
    sock, _ = dockerd
    r = subprocess.run([BIN, "--config", config(tmp_path, sock), "probe",
                        "-p", "container", "--json"],
                       capture_output=True, text=True, timeout=120)
    f = json.loads(r.stdout)
    assert f["available"], f["unavailable_reason"]
    assert f["mechanism"]["runtime"] == "docker"
    assert f["mechanism"]["runtime_version"].startswith("Docker Engine")
    assert all(f["isolation"].values()), f["isolation"]
    res = run(tmp_path, sock, "-l", "python", "-e", "print('hello', 6*7)")
    assert res["outcome"] == "completed", res
    assert res["stdout"] == "hello 42\n"
    assert no_containers(sock)


def test_memory_limit_kills(dockerd, tmp_path):
    sock, _ = dockerd
    res = run(tmp_path, sock, "-l", "python", "-m", "64M", "-e",
              "b = []\nwhile True: b.append(bytearray(1 << 20))")
    assert res["outcome"] == "killed" and res["reason"] == "memory_limit"


def test_pids_limit_binds(dockerd, tmp_path):
    sock, _ = dockerd
    res = run(tmp_path, sock, "-l", "sh", "--pids", "8", "-e",
              "for i in $(seq 1 30); do sleep 5 & done; wait")
    assert "fork" in res["stderr"].lower(), res


def test_no_network(dockerd, tmp_path):
    sock, _ = dockerd
    res = run(tmp_path, sock, "-l", "python", "-e",
              "import socket\nprint(open('/proc/net/dev').read().count(':'))"
              "\ntry:\n    socket.create_connection(('1.1.1.1', 53), 2)\n"
              "    print('CONNECTED')\nexcept OSError as e:\n"
              "    print('refused', e.errno)")
    assert res["outcome"] == "completed", res
    lines = res["stdout"].splitlines()
    assert lines[0] == "1"                       # lo only
    assert lines[1].startswith("refused")


def test_timeout_leaves_no_container(dockerd, tmp_path):
    sock, _ = dockerd
    res = run(tmp_path, sock, "-l", "sh", "-t", "1s", "-e", "sleep 30")
    assert res["outcome"] == "timed_out", res
    assert no_containers(sock)


def test_interrupt_leaves_no_container(dockerd, tmp_path):
    sock, _ = dockerd
    p = subprocess.Popen([BIN, "--config", config(tmp_path, sock), "run",
                          "-p", "container", "--json", "-l", "sh", "-e",
                          "sleep 30"],
                         stdout=subprocess.PIPE, text=True)
    for _ in range(400):
        st, lst = engine(sock, "GET", "/containers/json")
        if lst:
            break
        time.sleep(0.05)
    assert lst, "the container never ran"
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    res = json.loads(out)
    assert res["outcome"] == "cancelled", res
    assert no_containers(sock)


def test_stdin_reaches_the_program(dockerd, tmp_path):
    sock, _ = dockerd
    f = tmp_path / "in.bin"
    f.write_bytes(b"line one\nline two\n")
    res = run(tmp_path, sock, "-l", "sh", "--stdin-file", str(f), "-e",
              "wc -l")
    assert res["outcome"] == "completed", res
    assert res["stdout"].strip() == "2"


def test_conformance_kit(dockerd, tmp_path):
    sock, _ = dockerd
    r = subprocess.run([BIN, "--config", config(tmp_path, sock), "contract",
                        "-p", "container", "--json"],
                       capture_output=True, text=True, timeout=300)
    cases = json.loads(r.stdout)["cases"]
    failed = [c for c in cases if c["status"] == "fail"]
    assert failed == [], failed
    assert sum(c["status"] == "pass" for c in cases) >= 45
    assert no_containers(sock)
