"""Signals over the real binary, spawned from Python with a clean signal mask and dispositions
(a Swift test runner's children inherit blocked signals, which hides the default actions).

Policy (issue 9): SIGHUP and SIGQUIT end the process like SIGTERM (final snapshot, exit 0, no
backtrace); SIGUSR1 is ignored and serving goes on; SIGTERM ends a server blocked writing to a
stdout that nobody reads.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest

from conftest import flush_all

F_SETPIPE_SZ = 1031
F_GETPIPE_SZ = 1032  # Linux


def start(binary: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(binary), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        restore_signals=True,
    )


def request(id: int, method: str, params: dict | None = None) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}) + "\n").encode()


def read_line(proc: subprocess.Popen, timeout: float = 15.0) -> bytes | None:
    """One stdout line, or None when none comes within `timeout` (a hang guard, not a measurement)."""
    data = b""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        byte = os.read(fd, 1)
        if not byte:
            return None
        data += byte
    return data


def wait(proc: subprocess.Popen, timeout: float = 30.0) -> int | None:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def save(proc: subprocess.Popen, id: int, name: str) -> None:
    proc.stdin.write(request(id, "saveCustomEvent", {"name": name, "properties": {"n": id}}))
    proc.stdin.flush()
    reply = read_line(proc)
    assert reply is not None and json.loads(reply)["result"]["seq"] >= 1


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM, signal.SIGINT])
def test_stopping_signal_takes_final_snapshot_and_exits_zero(outbox_bin: Path, store: Path, sig: int) -> None:
    proc = start(outbox_bin, "--store", str(store), "--snapshot-interval", "3600")
    save(proc, 1, "kept")
    proc.send_signal(sig)
    status = wait(proc)
    stderr = proc.stderr.read().decode(errors="replace")
    assert status == 0, f"{signal.Signals(sig).name}: status {status}\n{stderr}"
    assert "Backtrac" not in stderr and "crashed" not in stderr, stderr
    assert proc.stdout.read() == b""  # nothing after the signal, no torn line
    assert (store / "checkpoint.json").exists(), sorted(p.name for p in store.iterdir())
    assert [item["name"] for item in flush_all(outbox_bin, store).items] == ["kept"]


def test_sigusr1_is_ignored(outbox_bin: Path, store: Path) -> None:
    proc = start(outbox_bin, "--store", str(store), "--snapshot-interval", "3600")
    save(proc, 1, "before")
    proc.send_signal(signal.SIGUSR1)
    proc.stdin.write(request(2, "status"))
    proc.stdin.flush()
    reply = read_line(proc)
    assert reply is not None, f"no reply after SIGUSR1; exit {proc.poll()}"
    assert json.loads(reply)["id"] == 2
    proc.stdin.close()
    assert wait(proc) == 0
    assert [item["name"] for item in flush_all(outbox_bin, store).items] == ["before"]


def test_sigterm_ends_a_server_blocked_on_a_full_stdout(outbox_bin: Path, store: Path) -> None:
    proc = start(outbox_bin, "--store", str(store), "--snapshot-interval", "3600")
    save(proc, 1, "before-block")
    fd = proc.stdout.fileno()
    # The server widened its stdout pipe at start (to 1 MiB); back to the 64 KiB the replies below
    # fill several times over.
    fcntl.fcntl(fd, F_SETPIPE_SZ, 65536)
    batch = b"[" + b",".join(request(n, "status").strip() for n in range(2, 1002)) + b"]\n"
    proc.stdin.write(batch)  # replies several times the pipe's capacity, never read
    proc.stdin.flush()
    capacity = fcntl.fcntl(fd, F_GETPIPE_SZ)
    queued = 0
    for _ in range(3000):  # wait until the server has filled the pipe (and is blocked on it)
        queued = int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), "little")
        if queued >= capacity - 4096:
            break
        time.sleep(0.01)
    assert queued >= capacity - 4096, f"stdout never filled: {queued} of {capacity}"
    proc.send_signal(signal.SIGTERM)
    status = wait(proc)
    assert status == 0, proc.stderr.read().decode(errors="replace")
    assert [item["name"] for item in flush_all(outbox_bin, store).items] == ["before-block"]
