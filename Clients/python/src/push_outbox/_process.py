"""Process helpers shared by the sync and asyncio clients: argv, signals, the stderr tail."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import deque
from typing import Deque, List, Optional, Sequence, Union

from ._protocol import STDERR_TAIL_BYTES


def build_argv(
    binary: str,
    *,
    store: Optional[Union[str, os.PathLike[str]]],
    memory: bool,
    args: Sequence[Union[str, os.PathLike[str]]],
) -> List[str]:
    argv = [binary]
    if store is not None and memory:
        raise ValueError("store= and memory=True are mutually exclusive")
    if store is not None:
        argv += ["--store", os.fspath(store)]
    if memory:
        argv.append("--memory")
    argv += [os.fspath(a) for a in args]
    return argv


def send_signal(proc: subprocess.Popen[bytes], sig: int, new_session: bool) -> None:
    """Signal the server (its whole process group when it leads its own session)."""
    if proc.poll() is not None:
        return
    try:
        if new_session and hasattr(os, "killpg"):
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


SIGTERM = signal.SIGTERM
SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)


class StderrTail:
    """Keeps the last *limit* bytes written to the server's stderr (thread-safe)."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self._limit = limit
        self._chunks: Deque[bytes] = deque()
        self._size = 0
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            if len(data) >= self._limit:
                self._chunks.clear()
                self._chunks.append(data[-self._limit :])
                self._size = self._limit
                return
            self._chunks.append(data)
            self._size += len(data)
            while self._size > self._limit:
                head = self._chunks[0]
                excess = self._size - self._limit
                if len(head) <= excess:
                    self._chunks.popleft()
                    self._size -= len(head)
                else:
                    self._chunks[0] = head[excess:]
                    self._size -= excess

    def bytes(self) -> bytes:
        with self._lock:
            return b"".join(self._chunks)

    def text(self) -> str:
        return self.bytes().decode("utf-8", "replace")
