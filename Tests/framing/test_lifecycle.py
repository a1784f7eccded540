"""The editor lifecycle over the real binary: `shutdown` answers null after a snapshot and refuses
what follows; `exit` ends the process with 0 after `shutdown`, 1 without; stdin EOF is unchanged."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from conftest import FIXED, message, request, run

pytestmark = pytest.mark.timeout(60)

SAVE = request(1, "saveCustomEvent", {"name": "push_opened"})
SHUTDOWN = request(2, "shutdown")
EXIT = request(None, "exit")


def lines(*texts: str) -> bytes:
    return "".join(t + "\n" for t in texts).encode()


def status(binary: Path, store: str) -> dict:
    proc = run(binary, lines(request(9, "status")), "--store", store, *FIXED)
    return json.loads(proc.stdout)["result"]


def test_shutdown_answers_null_after_a_snapshot(spawn, binary: Path, tmp_path: Path) -> None:  # noqa: ANN001
    store = str(tmp_path / "store")
    server = spawn("--store", store, "--snapshot-interval", "86400", *FIXED)
    server.send(lines(SAVE, SHUTDOWN))
    assert server.read_line()["result"]["pending"] == 1
    assert server.read_line() == {"jsonrpc": "2.0", "id": 2, "result": None}
    server.proc.send_signal(signal.SIGKILL)  # no exit, no final snapshot at exit: only shutdown's
    server.proc.wait()
    after = status(binary, store)
    assert after["pending"]["total"] == 1
    assert after["snapshotSeq"] >= 1, "shutdown took no snapshot"


def test_after_shutdown_every_request_but_exit_is_refused(binary: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    late = request(3, "saveCustomEvent", {"name": "too_late"})
    dropped = request(None, "saveCustomEvent", {"name": "dropped"})
    proc = run(
        binary,
        lines(SAVE, SHUTDOWN, late, dropped, request(4, "shutdown"), EXIT),
        "--store",
        store,
        *FIXED,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    for refused in replies[2:]:
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"]["reason"] == "shutting_down"
    assert proc.returncode == 0
    assert status(binary, store)["pending"]["total"] == 1  # neither later save was stored


@pytest.mark.parametrize("framing", ["newline", "content-length"])
def test_exit_after_shutdown_is_0_and_without_it_1(binary: Path, framing: str) -> None:
    def send(*texts: str) -> bytes:
        return b"".join(message(t) for t in texts) if framing == "content-length" else lines(*texts)

    assert run(binary, send(SHUTDOWN, EXIT), "--memory").returncode == 0
    assert run(binary, send(EXIT), "--memory").returncode == 1
    assert run(binary, send(SAVE, EXIT), "--memory").returncode == 1


def test_nothing_after_exit_is_read(binary: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    proc = run(
        binary,
        lines(SAVE, EXIT, request(5, "saveCustomEvent", {"name": "after"})),
        "--store",
        store,
    )
    assert [json.loads(line)["id"] for line in proc.stdout.splitlines()] == [1]
    assert proc.returncode == 1
    assert status(binary, store)["pending"]["total"] == 1


def test_end_of_input_keeps_its_behaviour(binary: Path) -> None:
    assert run(binary, lines(SAVE), "--memory").returncode == 0
    assert (
        run(binary, lines(SHUTDOWN), "--memory").returncode == 0
    )  # shutdown, then EOF without exit
