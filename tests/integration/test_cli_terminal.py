"""The operator's terminal (threat model T12): `airlock run` writing a
program's output to a terminal shows its control sequences as escapes
(cursor movement, window title, OSC 52 clipboard, C1 CSI, DEL, bytes that
are not UTF-8), keeps UTF-8 text, and says why a run failed; `--raw`
writes the bytes as they are, and pipes always get the exact bytes.  The
terminal is a pseudo-terminal (os.openpty); the program runs on the local
provider, as the CLI's writing does not depend on where it ran."""
import json
import os
import subprocess

from conftest import BIN

# ESC ] 0 ; title BEL, ESC [ 2 J, OSC 52 (clipboard), C1 CSI (U+009B),
# DEL, a byte that is not UTF-8, then UTF-8 text.
CODE = (r"printf 'A\033]0;pwned\007B\033[2J\033]52;c;cm0gLXJmIC8=\007"
        r"\302\2331mC\177D\377 caf\303\251\n'; "
        r"printf 'E\033[31m\n' >&2; exit 3")
RAW_STDOUT = (b"A\x1b]0;pwned\x07B\x1b[2J\x1b]52;c;cm0gLXJmIC8=\x07"
              b"\xc2\x9b1mC\x7fD\xff caf\xc3\xa9\n")
CONTROLS = [b"\x1b", b"\x07", b"\x7f", b"\xc2\x9b", b"\xff"]


def on_terminal(args, state_dir):
    """Runs the CLI with stdout and stderr on one pseudo-terminal; returns
    (exit status, everything the terminal received)."""
    master, slave = os.openpty()
    cmd = [BIN, "--state-dir", state_dir, "run", "-p", "local"] + args
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=slave)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    return p.wait(timeout=60), got


def test_control_sequences_are_shown_not_sent(state_dir):
    rc, got = on_terminal(["-l", "sh", "-e", CODE], state_dir)
    assert rc == 3
    for c in CONTROLS:
        assert c not in got, (c, got)
    assert b"A\\x1b]0;pwned\\x07B\\x1b[2J\\x1b]52;c;" in got
    assert b"\\u009b1mC\\x7fD\\xff caf\xc3\xa9" in got  # UTF-8 text kept
    assert b"E\\x1b[31m" in got


def test_failed_run_says_so_on_a_terminal(state_dir):
    rc, got = on_terminal(["-l", "sh", "-e", "exit 3"], state_dir)
    assert rc == 3
    assert b"airlock: failed (exit status 3)" in got


def test_raw_writes_the_bytes(state_dir):
    rc, got = on_terminal(["--raw", "-l", "sh", "-e", CODE], state_dir)
    assert rc == 3
    # the terminal's line discipline turns \n into \r\n
    assert RAW_STDOUT.replace(b"\n", b"\r\n") in got
    assert b"E\x1b[31m" in got


def test_json_on_a_terminal_stays_json_without_controls(state_dir):
    rc, got = on_terminal(["--json", "-l", "sh", "-e",
                           r"printf '\302\233x\177'"], state_dir)
    assert rc == 0
    for c in CONTROLS:
        assert c not in got, (c, got)
    r = json.loads(got.replace(b"\r\n", b"\n"))
    assert r["stdout"] == "\u009bx\x7f"


def test_pipes_get_the_exact_bytes(airlock):
    p = airlock("run", "-p", "local", "-l", "sh", "-e", CODE)
    assert p.returncode == 3
    assert p.stdout == RAW_STDOUT
    assert p.stderr == b"E\x1b[31m\n"
