"""Shared helpers for the MCP tests: the binary, and a raw line-by-line session over real pipes.

The official `mcp` SDK (PyPI, in .ci/requirements.txt) is the client in test_sdk.py; the raw
session here checks the wire itself, byte for byte where the SDK would hide a detail.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXED = ["--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]
MODERN = "2026-07-28"


def find_binary() -> Path:
    env = os.environ.get("PUSH_OUTBOX_BIN")
    if env:
        return Path(env)
    for build in ("debug", "release"):
        path = REPO / ".build" / build / "push-outbox"
        if path.exists():
            return path
    pytest.fail(
        "push-outbox binary not found: run `swift build` or set PUSH_OUTBOX_BIN", pytrace=False
    )


@pytest.fixture(scope="session")
def binary() -> Path:
    return find_binary()


def meta(version: str = MODERN, **extra: Any) -> Dict[str, Any]:
    """The stateless era's per-request `_meta` fields."""
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "push-outbox tests", "version": "1"},
        **extra,
    }


class Session:
    """One push-outbox process; `call` writes one request line and reads its reply line."""

    def __init__(self, binary: Path, *args: str, env: Optional[Dict[str, str]] = None) -> None:
        self.proc = subprocess.Popen(
            [str(binary), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
        )
        self.next_id = 0
        self.notifications: List[Dict[str, Any]] = []  # server notifications read, in order

    def send(self, message: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> Dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed stdout"
        reply: Dict[str, Any] = json.loads(line)
        return reply

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        self.next_id += 1
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.read()
        while "method" in reply:  # a notification (progress of a long call)
            self.notifications.append(reply)
            reply = self.read()
        assert reply["id"] == self.next_id, reply
        return reply

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rest = self.proc.stdout.read() if self.proc.stdout else b""
        assert rest == b"", f"unexpected output: {rest!r}"
        return self.proc.wait(timeout=30)


@pytest.fixture
def session(binary: Path) -> Iterator[Session]:
    s = Session(binary, "--memory", *FIXED)
    yield s
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()


def initialize(s: Session, version: str = "2025-11-25") -> Dict[str, Any]:
    reply = s.call(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    )
    s.notify("notifications/initialized")
    return reply


def tool_result(reply: Dict[str, Any]) -> Dict[str, Any]:
    assert "result" in reply, reply
    result: Dict[str, Any] = reply["result"]
    return result


def lines(replies: List[Dict[str, Any]]) -> List[str]:
    return [json.dumps(r, sort_keys=True) for r in replies]
