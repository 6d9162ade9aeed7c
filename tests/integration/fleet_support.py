"""Shared support for the fleet tests and the fleet bench rows
(docs/scale-out.md): a private PostgreSQL 15 (initdb into a temporary
directory as an unprivileged user, a private socket directory and a
loopback port, stopped with pg_ctl) and airlockd nodes sharing it.

No tests live here."""
import hashlib
import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

from test_durable_support import DurableDaemon, local_config

PG_BIN = pathlib.Path("/usr/lib/postgresql/15/bin")
PG_USER = "airlock-unpriv"
TOKEN = "fleet-token-0123456789abcdef"
TOKEN2 = "fleet-token-other-tenant-0000"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Postgres:
    """A throw-away PostgreSQL cluster.  As root it runs as PG_USER
    (created idempotently when missing); PostgreSQL refuses to run as
    root."""

    def __init__(self):
        for tool in ("initdb", "pg_ctl", "postgres"):
            assert (PG_BIN / tool).exists(), \
                "PostgreSQL 15 is required (scripts/install-deps.sh)"
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="airlock-pg-"))
        os.chmod(self.root, 0o755)
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            try:
                pwd.getpwnam(PG_USER)
            except KeyError:
                subprocess.run(["useradd", "--system", "--no-create-home",
                                "--shell", "/usr/sbin/nologin", PG_USER],
                               check=True)
            pw = pwd.getpwnam(PG_USER)
            self.sock.mkdir()
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            os.chown(self.sock, pw.pw_uid, pw.pw_gid)
        else:
            self.sock.mkdir()
        self.url = ("postgresql://airlock@127.0.0.1:%d/postgres"
                    "?connect_timeout=3" % self.port)
        self._run([str(PG_BIN / "initdb"), "-D", str(self.data), "-U",
                   "airlock", "--auth=trust", "-E", "UTF8", "--no-sync"])
        self.start()

    def _run(self, args, check=True):
        if self.as_root:
            args = ["runuser", "-u", PG_USER, "--"] + args
        return subprocess.run(args, check=check, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=120)

    def start(self):
        opts = ("-c listen_addresses=127.0.0.1 -p %d "
                "-c unix_socket_directories=%s -c max_connections=200"
                % (self.port, self.sock))
        self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l",
                   str(self.root / "log"), "-w", "-t", "60", "-o", opts,
                   "start"])

    def stop(self, mode="fast"):
        self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w",
                   "-t", "60", "-m", mode, "stop"], check=False)

    def restart(self):
        self.stop()
        self.start()

    def psql(self, sql):
        """One query's rows as lists of strings (psql, unaligned)."""
        out = self._run(["/usr/bin/psql", "-X", "-q", "-A", "-t", "-F",
                         "\t", "-h", str(self.sock), "-p", str(self.port),
                         "-U", "airlock", "-d", "postgres", "-c", sql])
        text = out.stdout.decode()
        return [line.split("\t") for line in text.splitlines() if line]

    def close(self):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def fleet_config(url, concurrency=4, tenant_max=0, lease_ms=3000,
                 node_id=None, artifacts_dir=None, adopt=True):
    cfg = local_config(tenants=("default", "other"), concurrency=concurrency)
    if tenant_max:
        cfg["tenants"]["default"]["concurrency"] = tenant_max
    cfg["tokens"] = {hashlib.sha256(TOKEN.encode()).hexdigest(): "default",
                     hashlib.sha256(TOKEN2.encode()).hexdigest(): "other"}
    cfg["store"] = url
    cfg["fleet"] = {"lease_ms": lease_ms, "adopt": adopt}
    if node_id:
        cfg["fleet"]["node_id"] = node_id
    if artifacts_dir:
        cfg["fleet"]["artifacts_dir"] = str(artifacts_dir)
    cfg["idle_supervisors"] = 0
    return cfg


class Node(DurableDaemon):
    """An airlockd node of the fleet; requests carry the fleet's token."""

    def request(self, method, path, body=None, token=TOKEN, **kw):
        return super().request(method, path, body=body, token=token, **kw)


def start_nodes(tmp_path, pg, n=3, **cfg_kw):
    nodes = []
    for i in range(n):
        node = Node(tmp_path, fleet_config(
            pg.url, node_id="node%d" % i,
            artifacts_dir=tmp_path / "shared", **cfg_kw), name="node%d" % i)
        node.start(timeout=30)
        nodes.append(node)
    return nodes


def wait_until(pred, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()
