"""A push-outbox session that reads replies on a thread, for long calls: replies can come out of
request order, and progress notifications come between them. Standard library only."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional

from conftest import Outbox


class Session:
    """Wraps a started `Outbox`: `send` writes one message, `next` waits for the next line read."""

    def __init__(self, box: Outbox) -> None:
        self.box = box
        self.lines: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []  # every message read, in order, with "_at" (monotonic)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        stdout = self.box.proc.stdout
        assert stdout is not None
        for line in stdout:
            message = json.loads(line)
            message["_at"] = time.monotonic()
            self.lines.put(message)
        self.lines.put(None)

    def send(self, method: str, params: Optional[Dict[str, Any]] = None, id: Any = None) -> None:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if id is not None:
            message["id"] = id
        if params is not None:
            message["params"] = params
        stdin = self.box.proc.stdin
        assert stdin is not None
        stdin.write((json.dumps(message) + "\n").encode())
        stdin.flush()

    def next(self, timeout: float = 30) -> Dict[str, Any]:
        try:
            message = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing read in {timeout} s; read so far: {self.seen}") from None
        assert message is not None, f"stdout closed; stderr: {self.box.stderr_text()}"
        self.seen.append(message)
        return message

    def reply(self, id: Any, timeout: float = 30) -> Dict[str, Any]:
        """Reads until the reply to `id` (every line read stays in `seen`)."""
        while True:
            message = self.next(timeout)
            if message.get("id") == id and "method" not in message:
                return message

    def call(
        self, method: str, params: Optional[Dict[str, Any]] = None, id: Any = "c"
    ) -> Dict[str, Any]:
        self.send(method, params, id)
        return self.reply(id)

    def close(self) -> List[Dict[str, Any]]:
        """Closes stdin, waits for the exit and returns the messages read after the last `next`."""
        stdin = self.box.proc.stdin
        assert stdin is not None
        stdin.close()
        self.box.proc.wait(timeout=60)
        self.thread.join(timeout=10)
        rest = []
        while True:
            message = self.lines.get(timeout=10)
            if message is None:
                return rest
            rest.append(message)


def until(predicate, timeout: float = 30, step: float = 0.01) -> None:
    """Waits for `predicate()`; the timeout only guards against a hang."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(step)


def started(proc: subprocess.Popen) -> bool:
    return proc.poll() is None
