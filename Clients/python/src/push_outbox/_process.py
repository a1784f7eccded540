"""Process helpers shared by the sync and asyncio clients: argv, signals, the stderr tail."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from collections import deque
from typing import Any, Callable, Deque, List, Mapping, Optional, Sequence, Tuple, Union

from ._protocol import STDERR_TAIL_BYTES, TERM_TIMEOUT, split_lines

log = logging.getLogger("push_outbox")


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
    if proc.poll() is None:
        signal_running(proc, sig, new_session)


def signal_running(proc: Any, sig: int, new_session: bool) -> None:
    """Signal a server process not known to have exited (sync `Popen` or asyncio `Process`)."""
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


class StderrSink:
    """The server's stderr: its tail (for :class:`ServerExited`) and each line for a handler."""

    def __init__(self, handler: Optional[Callable[[str], None]]) -> None:
        self._tail = StderrTail()
        self._handler = handler
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._tail.feed(chunk)
        if self._handler is None:
            return
        self._pending += chunk
        for line in split_lines(self._pending):
            self._emit(line)
        if len(self._pending) > STDERR_TAIL_BYTES:  # no newline for a long while
            self._emit(bytes(self._pending))
            self._pending.clear()

    def finish(self) -> None:
        """Hands an unterminated last line to the handler."""
        if self._pending and self._handler is not None:
            self._emit(bytes(self._pending))
            self._pending.clear()

    def text(self) -> str:
        return self._tail.text()

    def _emit(self, line: bytes) -> None:
        try:
            self._handler(line.decode("utf-8", "replace"))  # type: ignore[misc]
        except Exception:  # a broken handler must not stop the drain
            log.exception("push-outbox stderr_handler raised")


def popen(
    argv: Sequence[str],
    env: Optional[Mapping[str, str]],
    cwd: Optional[Union[str, os.PathLike[str]]],
) -> Tuple[subprocess.Popen[bytes], bool]:
    """Starts the server with three pipes (in its own session on POSIX); returns it and that flag."""
    new_session = os.name == "posix"
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=os.fspath(cwd) if cwd is not None else None,
        start_new_session=new_session,
    )
    return proc, new_session


def terminate(proc: subprocess.Popen[bytes], grace: float, new_session: bool) -> None:
    """Waits *grace* seconds for the server to exit, then sends SIGTERM, then SIGKILL."""
    try:
        proc.wait(timeout=grace)
        return
    except subprocess.TimeoutExpired:
        pass
    log.warning(
        "push-outbox pid %d did not exit %.1fs after stdin closed; sending SIGTERM",
        proc.pid,
        grace,
    )
    send_signal(proc, SIGTERM, new_session)
    try:
        proc.wait(timeout=TERM_TIMEOUT)
        return
    except subprocess.TimeoutExpired:
        pass
    log.warning("push-outbox pid %d ignored SIGTERM; sending SIGKILL", proc.pid)
    send_signal(proc, SIGKILL, new_session)
    proc.wait()
    try:
        proc.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass
