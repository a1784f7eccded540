"""Every entry point started with fd 0, 1 or 2 closed (`<&-`, `>&-`, `2>&-`, through `sh -c 'exec …'`).

A closed standard descriptor must become /dev/null before the process opens anything: otherwise the
store's LOCK (or the server's signal pipe, or the import's FILE) takes its number, and `flush >&-`
writes the items into LOCK and removes them. Each test checks: a bounded run, the exit code and
stderr line, that LOCK holds exactly a pid (the run's own, or the previous owner's when the run was
refused before opening the store), that no item was lost (read back with a normal run), and, on
Linux, while the process runs, that the closed descriptor is /dev/null (`/proc/PID/fd/N`).

A closed stdout is a usage error (exit 2, nothing done) for the server and `flush`, whose stdout is
their data; `deliver` and `import` write nothing there and run normally.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import flush_all, run_once, status_only

CLOSE = {"stdin": "<&-", "stdout": ">&-", "stderr": "2>&-", "stdout+stderr": ">&- 2>&-"}
FD = {"stdin": 0, "stdout": 1, "stderr": 2}
PROC = Path("/proc/self/fd").exists()  # Linux: the probe of the live process's descriptors
F_SETPIPE_SZ = 1031
N = 40  # about 13 kB of flushed lines: more than a 4 kB pipe holds, so `flush` waits for the reader
REFUSED = "stdout is closed, but {} would go there; nothing was done"


def start(
    binary: Path, closed: str, *args: str, env: dict[str, str] | None = None, **kw: Any
) -> subprocess.Popen[bytes]:
    """The binary with one standard descriptor closed; the others as `kw` says (default: pipes)."""
    streams: dict[str, Any] = {
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
    }
    streams.update(kw)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")} | (env or {})
    script = f'exec "$0" "$@" {CLOSE[closed]}'
    return subprocess.Popen(["sh", "-c", script, str(binary), *args], env=clean, **streams)


def finish(
    proc: subprocess.Popen[bytes], input: bytes | None = None, timeout: float = 15.0
) -> tuple[int, bytes, bytes]:
    """Exit code, stdout, stderr; a process still running after `timeout` is killed and fails the test."""
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running after {timeout}s (hung)")
    return proc.returncode, out or b"", err or b""


def probe(proc: subprocess.Popen[bytes], closed: str) -> None:
    """While `proc` runs: the descriptor that was closed at start is /dev/null, not one of its files."""
    if PROC:
        target = os.readlink(f"/proc/{proc.pid}/fd/{FD[closed]}")
        assert target == "/dev/null", f"fd {FD[closed]} is {target}"


def seed(binary: Path, store: Path, n: int = N) -> bytes:
    """`n` saves (names e0…), then the LOCK the seeding run left (its pid)."""
    saves = [
        {
            "jsonrpc": "2.0",
            "id": k,
            "method": "saveCustomEvent",
            "params": {
                "name": f"e{k}",
                "user": {"externalId": "u1"},
                "properties": {"pad": "x" * 200},
            },
        }
        for k in range(n)
    ]
    done = run_once(binary, store, input="".join(json.dumps(s) + "\n" for s in saves).encode())
    assert done.returncode == 0, done.stderr
    lock = (store / "LOCK").read_bytes()
    assert lock.isdigit()
    return lock


def names(binary: Path, store: Path) -> list[str]:
    return sorted(item["name"] for item in flush_all(binary, store).items)


def all_seeded(n: int = N) -> list[str]:
    return sorted(f"e{k}" for k in range(n))


def check_lock(store: Path, expected: bytes) -> None:
    assert (store / "LOCK").read_bytes() == expected, "LOCK must hold a pid and nothing else"


def small_pipe() -> tuple[int, int]:
    """A pipe that holds 4 kB (Linux; elsewhere as it comes)."""
    read_end, write_end = os.pipe()
    if PROC:
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
    return read_end, write_end


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_server_with_stdin_closed_ends_at_once_and_releases_the_lock(
    outbox_bin: Path, store: Path
) -> None:
    seed(outbox_bin, store)
    proc = start(outbox_bin, "stdin", "--store", str(store))
    rc, out, err = finish(proc)
    assert (rc, out, err) == (0, b"", b"")
    check_lock(store, str(proc.pid).encode())
    assert names(outbox_bin, store) == all_seeded()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("closed", ["stdout", "stdout+stderr"])
def test_server_with_stdout_closed_refuses_to_start(
    outbox_bin: Path, store: Path, closed: str
) -> None:
    before = seed(outbox_bin, store)
    proc = start(outbox_bin, closed, "--store", str(store))
    save = b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"unseen"}}\n'
    rc, out, err = finish(proc, save)  # then end of input
    assert rc == 2, err
    if closed == "stdout":
        assert err.decode().startswith("push-outbox: " + REFUSED.format("the replies")), err
    check_lock(store, before)  # the store was not even opened
    assert names(outbox_bin, store) == all_seeded()  # and the save was not read


@pytest.mark.timeout(60)
def test_server_with_stderr_closed_logs_to_dev_null(outbox_bin: Path, store: Path) -> None:
    seed(outbox_bin, store)
    proc = start(outbox_bin, "stderr", "--store", str(store), "--log-level", "debug", stderr=None)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"late"}}\n'
    )
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    assert "result" in reply, reply
    probe(proc, "stderr")
    check_lock(store, str(proc.pid).encode())
    rc, out, _ = finish(proc)
    assert (rc, out) == (0, b"")
    assert names(outbox_bin, store) == sorted([*all_seeded(), "late"])


# ---------------------------------------------------------------------------------------------
# flush and flush --lease
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("lease", [False, True], ids=["flush", "flush-lease"])
def test_flush_with_stdout_closed_is_a_usage_error_and_takes_nothing(
    outbox_bin: Path, store: Path, lease: bool
) -> None:
    before = seed(outbox_bin, store)
    args = ["flush", "--store", str(store), *(["--lease", "60000"] if lease else [])]
    rc, out, err = finish(start(outbox_bin, "stdout", *args))
    assert rc == 2, err
    assert err.decode() == "push-outbox flush: " + REFUSED.format("the flushed items") + (
        " (to discard it on purpose, redirect stdout to /dev/null)\n"
    )
    check_lock(store, before)
    assert status_only(outbox_bin, store)["lease"] is None
    assert names(outbox_bin, store) == all_seeded()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("closed", ["stdin", "stderr"])
@pytest.mark.parametrize("lease", [False, True], ids=["flush", "flush-lease"])
def test_flush_with_stdin_or_stderr_closed_flushes_everything(
    outbox_bin: Path, store: Path, closed: str, lease: bool
) -> None:
    seed(outbox_bin, store)
    read_end, write_end = small_pipe()
    args = ["flush", "--store", str(store), *(["--lease", "60000"] if lease else [])]
    proc = start(outbox_bin, closed, *args, stdout=write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as stdout:
        first = stdout.readline()  # the store is open and flush waits for this reader
        probe(proc, closed)
        lines = [first, *stdout.read().splitlines(keepends=True)]
    rc, _, err = finish(proc)
    assert rc == 0, err
    assert sorted(json.loads(line)["name"] for line in lines) == all_seeded()
    if closed == "stdin":
        leased = N if lease else 0
        assert (
            f"{N} lines, {N} items; left in the store: 0 still pending, {leased} leased, 0 dead letters"
            in err.decode()
        )
    check_lock(store, str(proc.pid).encode())
    if lease:  # still in the store, leased for a later ackFlush
        status = status_only(outbox_bin, store)
        assert (status["pending"]["total"], status["lease"]["count"]) == (N, N)
    else:
        assert names(outbox_bin, store) == []


# ---------------------------------------------------------------------------------------------
# deliver, against a Braze stub that holds the request until the probe is done, then answers 401
# ---------------------------------------------------------------------------------------------


class HeldBraze:
    """Accepts one connection, waits for `release`, answers 401 (delivery stops, items kept)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            conn.recv(1 << 16)
            self.accepted.set()
            self.release.wait(30)
            conn.sendall(
                b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )

    def close(self) -> None:
        self.release.set()
        self.server.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("closed", ["stdin", "stdout", "stderr"])
def test_deliver_runs_normally(outbox_bin: Path, store: Path, closed: str) -> None:
    seed(outbox_bin, store)
    braze = HeldBraze()
    try:
        endpoint = f"http://127.0.0.1:{braze.port}"
        proc = start(
            outbox_bin,
            closed,
            "deliver",
            "--store",
            str(store),
            "--braze-endpoint",
            endpoint,
            env={"BRAZE_API_KEY": "test-key"},
        )
        assert braze.accepted.wait(20), "deliver never reached the stub"
        probe(proc, closed)
        braze.release.set()
        rc, out, err = finish(proc)
    finally:
        braze.close()
    assert (rc, out) == (1, b""), err
    if closed != "stderr":
        assert "stopped: Braze answered HTTP 401" in err.decode(), err
    check_lock(store, str(proc.pid).encode())
    assert names(outbox_bin, store) == all_seeded()


# ---------------------------------------------------------------------------------------------
# import, reading FILE from a FIFO so that the probe runs while FILE is open
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("closed", ["stdin", "stdout", "stderr"])
def test_import_runs_normally(outbox_bin: Path, store: Path, tmp_path: Path, closed: str) -> None:
    seed(outbox_bin, store)
    fifo = tmp_path / "group.json"
    os.mkfifo(fifo)
    proc = start(
        outbox_bin,
        closed,
        "import",
        "--store",
        str(store),
        "--user",
        '{"externalId":"u1"}',
        str(fifo),
    )
    try:
        writer = os.open(fifo, os.O_WRONLY)  # returns once import opened FILE
        probe(proc, closed)
        group = {
            "pending_custom_events": [{"event_name": "imported_a"}, {"event_name": "imported_b"}]
        }
        os.write(writer, json.dumps(group).encode())
        os.close(writer)
        rc, out, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (rc, out) == (0, b""), err
    if closed != "stderr":
        assert "imported 2 of 2 elements, rejected 0" in err.decode(), err
    check_lock(store, str(proc.pid).encode())
    assert names(outbox_bin, store) == sorted([*all_seeded(), "imported_a", "imported_b"])
