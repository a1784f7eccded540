"""Process helpers shared by the sync and asyncio clients: argv and launch options, signals, the
stop ladder, the stderr tail; the sync start and stop. The asyncio start and stop, on the same
launch options and ladder, are in :mod:`._aio_process`."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import threading
from collections import deque
from typing import (
    Callable,
    Deque,
    Dict,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

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


class Launch(NamedTuple):
    """How a server is started, by either client: three pipes, and its own session on POSIX."""

    argv: List[str]
    env: Optional[Dict[str, str]]
    cwd: Optional[str]
    new_session: bool


def launch(
    argv: Sequence[str],
    env: Optional[Mapping[str, str]],
    cwd: Optional[Union[str, os.PathLike[str]]],
) -> Launch:
    return Launch(
        list(argv),
        dict(env) if env is not None else None,
        os.fspath(cwd) if cwd is not None else None,
        os.name == "posix",
    )


#: The server process of either client.
Process = Union["subprocess.Popen[bytes]", "asyncio.subprocess.Process"]


def send_signal(proc: Process, sig: int, new_session: bool) -> None:
    """Signal the server unless it has exited (its whole process group when it leads its own
    session)."""
    exited = proc.poll() if isinstance(proc, subprocess.Popen) else proc.returncode
    if exited is not None:
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


def stop_ladder(proc: Process, grace: float) -> Iterator[Tuple[Optional[int], Optional[float]]]:
    """How a client stops its server once stdin is closed, as steps of (signal to send first, or
    None; seconds to wait for the exit, None for as long as it takes): wait *grace*; SIGTERM and
    wait ``TERM_TIMEOUT``; SIGKILL and wait. Take the next step only while the server runs."""
    yield None, grace
    log.warning(
        "push-outbox pid %d did not exit %.1fs after stdin closed; sending SIGTERM",
        proc.pid,
        grace,
    )
    yield SIGTERM, TERM_TIMEOUT
    log.warning("push-outbox pid %d ignored SIGTERM; sending SIGKILL", proc.pid)
    yield SIGKILL, None


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


def popen(launch: Launch) -> subprocess.Popen[bytes]:
    """Starts the server for the sync client."""
    return subprocess.Popen(
        launch.argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=launch.env,
        cwd=launch.cwd,
        start_new_session=launch.new_session,
    )


def terminate(proc: subprocess.Popen[bytes], grace: float, new_session: bool) -> None:
    """Stops the server by :func:`stop_ladder`; after a SIGKILL, closes its stdin too."""
    for sig, wait in stop_ladder(proc, grace):
        if sig is not None:
            send_signal(proc, sig, new_session)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    if sig == SIGKILL:
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
