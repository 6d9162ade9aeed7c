"""The sandbox suite's hostile programs (attacks.md) inside the
`container` provider on runc: the same programs, the same safe results,
except where a container differs from the sandbox by construction (each
such test is redefined below and says why)."""
import os

import pytest

import sandbox_helpers
from test_sandbox_hostile import *  # noqa: F401,F403  the same tests

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the container provider runs as root")


@pytest.fixture(autouse=True)
def _container_provider(monkeypatch):
    monkeypatch.setattr(sandbox_helpers, "PROVIDER", "container")


def lines(res):
    assert res["outcome"] == "completed", res
    return res["stdout"].splitlines()


def test_devices_and_kernel_files():
    """As the sandbox's, except /dev/tty: an OCI runtime always makes it.
    With no controlling terminal (stdio are pipes) it cannot be opened."""
    out = lines(sandbox_helpers.hostile("devices.sh"))
    for d in ["/dev/mem", "/dev/kmsg", "/dev/vsock", "/dev/kvm"]:
        assert "absent %s" % d in out
    assert "sysrq denied" in out and "core_pattern denied" in out
    assert "no sys" in out
    assert "kcore 0" in out
    res = sandbox_helpers.run(
        "python", "import os\ntry:\n    os.open('/dev/tty', os.O_RDWR)\n"
        "    print('OPENED')\nexcept OSError as e:\n    print(e.errno)\n")
    assert lines(res) == ["6"]  # ENXIO: no terminal to be had


def test_setuid_binaries_are_inert():
    """The bits are there on the host's /usr, but the program is a
    non-root uid with no_new_privs and no capabilities: su fails, and
    newgrp cannot even start its shell (no user namespace maps 0 to
    us, as the sandbox's does)."""
    out = lines(sandbox_helpers.hostile("setuid.sh"))
    assert "-rwsr-xr-x /usr/bin/su" in out
    assert "su rc=1" in out
    assert "newgrp rc=1" in out
    assert not any(l.startswith("Uid:") for l in out), out
