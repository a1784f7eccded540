"""Helpers for the framing, lifecycle and editor tests: the real binary over real pipes.

The binary is $PUSH_OUTBOX_BIN, else .build/debug/push-outbox (then release) of this checkout.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXED = ["--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]


def find_binary() -> Optional[Path]:
    env = os.environ.get("PUSH_OUTBOX_BIN")
    if env:
        return Path(env)
    for build in ("debug", "release"):
        path = REPO / ".build" / build / "push-outbox"
        if path.exists():
            return path
    return None


@pytest.fixture(scope="session")
def binary() -> Path:
    path = find_binary()
    if path is None or not os.access(path, os.X_OK):
        pytest.fail("push-outbox binary not found: run `swift build` or set PUSH_OUTBOX_BIN")
    return path


def message(body: bytes | str, headers: str = "Content-Length: {n}\r\n") -> bytes:
    """One LSP base-protocol message (headers with `{n}` for the body's byte count)."""
    data = body.encode() if isinstance(body, str) else body
    return headers.format(n=len(data)).encode() + b"\r\n" + data


def request(id_: Any, method: str, params: Optional[dict] = None) -> str:
    value: dict = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        value["params"] = params
    if id_ is None:
        del value["id"]
    return json.dumps(value)


class Server:
    """The binary on pipes; replies read strictly in either framing."""

    def __init__(self, binary: Path, *args: str, env: Optional[dict] = None) -> None:
        self.proc = subprocess.Popen(
            [str(binary), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.buffer = b""

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=20)

    def _fill(self, timeout: float) -> bool:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def has_output(self, timeout: float = 0.2) -> bool:
        """True when a reply byte came (or was already there) within `timeout`."""
        return bool(self.buffer) or self._fill(timeout)

    def read_message(self, timeout: float = 10) -> Any:
        """One Content-Length reply, checked strictly: exactly that header, then the body."""
        while b"\r\n\r\n" not in self.buffer:
            assert self._fill(timeout), f"no complete header; have {self.buffer[:200]!r}"
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        assert head.startswith(b"Content-Length: ") and head[16:].isdigit(), head
        length = int(head[16:])
        while len(rest) < length:
            assert self._fill(timeout), f"body cut short: {rest!r}"
            rest = self.buffer.partition(b"\r\n\r\n")[2]
        self.buffer = rest[length:]
        return json.loads(rest[:length])

    def read_line(self, timeout: float = 10) -> Any:
        while b"\n" not in self.buffer:
            assert self._fill(timeout), f"no complete line; have {self.buffer[:200]!r}"
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def rest(self) -> bytes:
        """Everything left on stdout once the process has ended."""
        assert self.proc.stdout is not None
        return self.buffer + self.proc.stdout.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def spawn(binary: Path) -> Iterator[Any]:
    started: List[Server] = []

    def _spawn(*args: str, env: Optional[dict] = None) -> Server:
        server = Server(binary, *args, env=env)
        started.append(server)
        return server

    yield _spawn
    for server in started:
        server.kill()


def header_bodies(out: bytes) -> List[Any]:
    """Every Content-Length reply in `out`, parsed; fails on anything else."""
    replies = []
    while out:
        head, sep, rest = out.partition(b"\r\n\r\n")
        assert sep and head.startswith(b"Content-Length: ") and head[16:].isdigit(), out[:200]
        length = int(head[16:])
        assert len(rest) >= length, out[:200]
        replies.append(json.loads(rest[:length]))
        out = rest[length:]
    return replies


def run(
    binary: Path, data: bytes, *args: str, env: Optional[dict] = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary), *args],
        input=data,
        capture_output=True,
        timeout=30,
        env={**os.environ, **(env or {})},
    )
