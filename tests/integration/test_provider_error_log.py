"""A provider's own error message reaches the operator (issue 14, item 6;
docs/serve.md, "Logs"): a run whose provider fails with a message answers
`unavailable` / `provider_error` to the caller, and the daemon's log names
the run id and the provider's message.  The API's answer never carries
that message: a provider's message may hold what a caller must not see.

The failure is a real one of the trusted local provider: the program
makes a file of its run directory immutable (chattr +i, root on a file
system with the attribute), so the provider cannot remove its run
directory after the run and fails with "cannot remove the run
directory"."""
import os
import shutil
import subprocess

import pytest

from test_durable_support import (DurableDaemon, cleanup_state, local_config,
                                  sh)

MESSAGE = "cannot remove the run directory"


def _unpin(root):
    # What the program made immutable must become removable again.
    subprocess.run(["chattr", "-R", "-i", str(root)], capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None,
                    reason="needs root and chattr")
def test_provider_failure_message_is_logged_with_the_run_id(tmp_path):
    probe = tmp_path / "probe"
    probe.write_text("x")
    if subprocess.run(["chattr", "+i", str(probe)],
                      capture_output=True).returncode != 0:
        pytest.skip("the file system keeps no immutable attribute")
    _unpin(probe)

    d = DurableDaemon(tmp_path, local_config())
    try:
        d.start()
        st, _, res = d.run(sh("touch pinned && chattr +i pinned && "
                              "echo ran"), timeout=60)
        rid = res["run_id"]
        assert st == 503, res
        assert res["outcome"] == "unavailable", res
        assert res["reason"] == "provider_error", res
        # The caller is told the class of failure, not the message.
        assert MESSAGE not in str(res)
        st, _, stored = d.request("GET", "/v1/runs/" + rid)
        assert MESSAGE not in str(stored)
        # The operator finds it, with the run id, in the daemon's log.
        lines = [ln for ln in d.all_logs().splitlines()
                 if rid in ln and MESSAGE in ln]
        assert len(lines) == 1, d.all_logs()
        assert "local" in lines[0]
    finally:
        _unpin(tmp_path)
        d.stop() if d.proc is not None else None
        cleanup_state(d)
