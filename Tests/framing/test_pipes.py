"""Pipes: push-outbox asks Linux for 1 MiB pipe buffers on a stdin or stdout that is a pipe of the
default size, so a pipeline reading its replies in large reads does not make both sides wait every
64 KiB. A pipe whose size someone set, files and terminals are left alone, and a refusal (a lower
/proc/sys/fs/pipe-max-size) changes nothing."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import request

F_SETPIPE_SZ = 1031
F_GETPIPE_SZ = 1032
WANTED = 1 << 20

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="pipe sizes are a Linux feature")


def expected_size() -> int:
    """What the kernel grants an unprivileged ask for WANTED (root may pass the cap)."""
    cap = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    return WANTED if os.geteuid() == 0 or cap >= WANTED else 65536


def test_stdin_and_stdout_pipes_are_widened(binary: Path) -> None:
    # The pipes are made and measured here, before the child can widen them (a pipe Popen made
    # could already be widened by the time the test asked for its size).
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    assert fcntl.fcntl(in_write, F_GETPIPE_SZ) == 65536
    assert fcntl.fcntl(out_read, F_GETPIPE_SZ) == 65536
    proc = subprocess.Popen([str(binary), "--memory"], stdin=in_read, stdout=out_write)
    os.close(in_read)
    os.close(out_write)
    with os.fdopen(in_write, "wb") as stdin, os.fdopen(out_read, "rb") as stdout:
        stdin.write((request(1, "status") + "\n").encode())
        stdin.flush()
        assert b'"result"' in stdout.readline()  # the transport is set up by the first reply
        assert fcntl.fcntl(stdout.fileno(), F_GETPIPE_SZ) == expected_size()
        assert fcntl.fcntl(stdin.fileno(), F_GETPIPE_SZ) == expected_size()
    assert proc.wait(timeout=10) == 0


def test_a_file_on_stdin_is_read_as_before(binary: Path, tmp_path: Path) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text("".join(request(n, "status") + "\n" for n in range(1, 4)))
    with lines.open("rb") as stdin:
        out = subprocess.run([str(binary), "--memory"], stdin=stdin, capture_output=True, timeout=10)
    assert out.returncode == 0
    assert out.stdout.count(b'"result"') == 3


def test_a_pipe_whose_size_was_set_is_left_alone(binary: Path) -> None:
    reader, writer = os.pipe()
    try:
        fcntl.fcntl(writer, F_SETPIPE_SZ, 16384)
        proc = subprocess.Popen([str(binary), "--memory"], stdin=subprocess.PIPE, stdout=writer)
        assert proc.stdin is not None
        proc.stdin.write((request(1, "status") + "\n").encode())
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        assert b'"result"' in os.read(reader, 1 << 16)
        assert fcntl.fcntl(reader, F_GETPIPE_SZ) == 16384
    finally:
        os.close(reader)
        os.close(writer)
