"""Fixtures for the delivery tests: a Braze stub and the real push-outbox binary over real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from braze_stub import BrazeStub  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "test-key-5f1d9c"  # a fake key; tests check it never leaks


def binary() -> str:
    env = os.environ.get("PUSH_OUTBOX_BIN")
    if env:
        return env
    for kind in ("debug", "release"):
        path = ROOT / ".build" / kind / "push-outbox"
        if path.exists():
            return str(path)
    pytest.skip("push-outbox is not built (swift build)")


class Outbox:
    """push-outbox as a subprocess: one JSON-RPC request per call, replies read in order."""

    def __init__(self, store: str, args: List[str], env: Optional[Dict[str, str]] = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}
        full_env.update(env if env is not None else {"BRAZE_API_KEY": API_KEY})
        self.store = store
        self.stderr_path = Path(store).parent / (Path(store).name + ".stderr")
        self.stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            [binary(), "--store", store, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, env=full_env,
        )
        self.next_id = 0

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        self.next_id += 1
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"no reply to {method}; stderr: {self.stderr_text()}"
        reply = json.loads(line)
        assert reply.get("id") == self.next_id
        return reply

    def result(self, method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        reply = self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def save_event(self, name: str, user: Optional[str], **extra: Any) -> Dict[str, Any]:
        params: Dict[str, Any] = {"name": name, **extra}
        if user is not None:
            params["user"] = {"externalId": user}
        return self.result("saveCustomEvent", params)

    def stderr_text(self) -> str:
        if not self.stderr.closed:
            self.stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> int:
        if self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.stderr.close()
        return self.proc.returncode

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)
        self.stderr.close()


@pytest.fixture
def stub():
    server = BrazeStub().start()
    yield server
    server.stop()


@pytest.fixture
def store_dir():
    with tempfile.TemporaryDirectory(prefix="push-outbox-delivery-") as root:
        yield str(Path(root) / "store")


@pytest.fixture
def outbox(stub, store_dir):
    """A factory: outbox(args...) starts push-outbox on the test's store, pointed at the stub."""
    yield from outbox_factory(stub.url, store_dir)


@pytest.fixture
def fake():
    """`push-outbox fake-braze` (Clients/testing.md), for tests that need no oracle independent of
    the binary: it checks every body against its own table of Braze's rules."""
    sys.path.insert(0, str(ROOT / "Clients" / "python" / "src"))
    from push_outbox.testing import FakeBraze

    started = FakeBraze.start(api_key=API_KEY, binary=binary())
    yield started
    started.close()


@pytest.fixture
def outbox_on_fake(fake, store_dir):
    """The `outbox` factory, pointed at the fake."""
    yield from outbox_factory(fake.url, store_dir)


def outbox_factory(url: str, store_dir: str):
    started: List[Outbox] = []

    def start(*args: str, env: Optional[Dict[str, str]] = None, endpoint: bool = True) -> Outbox:
        flags = ["--braze-endpoint", url, "--braze-backoff-ms", "20"] if endpoint else []
        box = Outbox(store_dir, flags + list(args), env)
        started.append(box)
        return box

    yield start
    for box in started:
        if box.proc.poll() is None:
            box.kill9()
