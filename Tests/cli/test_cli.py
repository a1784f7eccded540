"""Command-line behaviour that needs a real terminal or a real process (the parser itself is
covered in process by Tests/PushOutboxTests/CommandLine/CommandLineTests.swift)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PUSH_OUTBOX_BIN", str(ROOT / ".build" / "debug" / "push-outbox"))


@pytest.mark.timeout(60)
def test_a_terminal_on_stdin_gets_a_one_line_hint_on_stderr() -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [BINARY, "--memory"], stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    os.close(follower)
    assert proc.stderr is not None
    hint = proc.stderr.readline().decode()
    os.write(leader, b"\x04")  # Ctrl-D: end of input
    proc.communicate(timeout=30)
    os.close(leader)
    assert hint.startswith("push-outbox: reading JSON-RPC 2.0 requests") and "store: memory" in hint


def test_no_hint_when_stdin_is_a_pipe() -> None:
    done = subprocess.run([BINARY, "--memory"], input=b"", capture_output=True, timeout=30)
    assert done.returncode == 0 and done.stderr == b""


def test_a_store_that_cannot_be_created_is_an_id_null_line_and_exit_1(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = subprocess.run(
        [BINARY, "--store", str(blocker / "store"), "--log-format", "json"],
        input=b"",
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 1
    [line] = done.stdout.decode().splitlines()
    reply = json.loads(line)
    assert reply["id"] is None and reply["error"]["code"] == -32007
    assert reply["error"]["data"]["reason"] == "cannot_create_store"
    [log] = done.stderr.decode().splitlines()
    assert (
        json.loads(log)["level"] == "error"
        and "cannot create the store" in json.loads(log)["message"]
    )


def test_a_usage_error_is_an_id_null_line_and_exit_2() -> None:
    done = subprocess.run(
        [BINARY, "--memory", "--store", "/tmp/x"], input=b"", capture_output=True, timeout=30
    )
    assert done.returncode == 2
    reply = json.loads(done.stdout)
    assert reply["error"]["code"] == -32007 and reply["error"]["data"]["reason"] == "usage"
    assert (
        done.stderr.decode().count("\n") == 1 and "cannot be used together" in done.stderr.decode()
    )


# Issue 17, defects 4 and 5: numeric flags at and past their limits are usage errors, never a trap.
HUGE_VALUES = [
    ("--max-line-bytes", "9223372036854775804"),
    ("--max-line-bytes", "9223372036854775807"),
    ("--max-line-bytes", "99999999999999999999"),
    ("--max-pending-bytes", "9223372036854775807"),
    ("--snapshot-interval", "1e300"),
    ("--snapshot-interval", "0x10"),
    ("--snapshot-interval", "9000000"),
    ("--snapshot-interval", "inf"),
    ("--max-batch", "+5"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("flag", "value"), HUGE_VALUES)
def test_numeric_flags_past_their_bounds_are_usage_errors(
    flag: str, value: str, tmp_path: Path
) -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"e"}}\n'
    env_name = "PUSH_OUTBOX_" + flag.removeprefix("--").replace("-", "_").upper()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    for argv, extra in (([flag, value], {}), ([], {env_name: value})):
        done = subprocess.run(
            [BINARY, "--store", str(tmp_path / "s"), *argv],
            input=line,
            capture_output=True,
            timeout=30,
            env={**env, **extra},
        )
        assert done.returncode == 2, (argv, extra, done)
        assert json.loads(done.stdout)["error"]["data"]["reason"] == "usage"
        assert "needs a" in done.stderr.decode()


@pytest.mark.timeout(60)
def test_the_largest_allowed_line_limit_serves(tmp_path: Path) -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"e"}}\n'
    done = subprocess.run(
        [
            BINARY,
            "--store",
            str(tmp_path / "s"),
            "--max-line-bytes",
            str(1 << 30),
            "--snapshot-interval",
            "86400",
        ],
        input=line,
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["result"]["seq"] == 1, done


@pytest.mark.timeout(60)
def test_stdin_that_is_a_directory_is_a_start_up_error(tmp_path: Path) -> None:
    """Issue 17, defect 12: it was a silent exit 0."""
    directory = os.open(tmp_path, os.O_RDONLY)
    try:
        done = subprocess.run(
            [BINARY, "--memory"], stdin=directory, capture_output=True, timeout=30
        )
    finally:
        os.close(directory)
    assert done.returncode == 1, done
    assert json.loads(done.stdout)["error"]["data"]["reason"] == "unreadable_input"
    assert "stdin is a directory" in done.stderr.decode()
