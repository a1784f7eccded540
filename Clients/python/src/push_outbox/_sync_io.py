"""The sync client's pipe I/O: the stderr and stdout reader threads, and request writes."""

from __future__ import annotations

import subprocess
import threading
from typing import IO, Any, Callable, Dict, List, Optional, Tuple, cast

from . import _protocol as P
from ._core import ClientBase, Outcome, Session, result_of
from .errors import CallTimeout, ServerExited, TransportError, server_exited


class _Slot:
    __slots__ = ("event", "response", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: Optional[Dict[str, Any]] = None
        self.error: Optional[BaseException] = None


class PendingCall:
    """A request sent by :meth:`Outbox.start`: wait for its reply, or cancel it."""

    def __init__(self, outbox: SyncPipes, method: str, request_id: int, slot: _Slot) -> None:
        self._outbox = outbox
        self.method = method
        #: The request's JSON-RPC id.
        self.id = request_id
        self._slot = slot

    def result(self, timeout: Optional[float] = P.MISSING) -> Any:
        """Waits for the reply (*timeout*: the client's by default) and returns its result."""
        outbox, slot = self._outbox, self._slot
        timeout = outbox._call_timeout(timeout)
        if not slot.event.wait(timeout):
            outbox._session.forget(self.id)
            if not slot.event.is_set():
                raise CallTimeout(self.method, cast(float, timeout), self.id)
        if slot.error is not None:
            err = slot.error
            if isinstance(err, ServerExited):
                raise err.copy()
            raise err
        response = slot.response
        assert response is not None
        return result_of(response, self.method, self.id)

    def cancel(self) -> None:
        """Sends ``$/cancelRequest`` for this call: a long call still running is answered at once
        with ``-32800`` (:meth:`result` raises :class:`RequestCancelled`); otherwise nothing happens."""
        self._outbox._write(P.encode_notification(P.CANCEL_METHOD, {"id": self.id}))


class SyncPipes(ClientBase):
    """Reads the server's stdout and stderr on two threads and writes requests to its stdin.

    Mixed into :class:`Outbox`, which sets these attributes.
    """

    _proc: subprocess.Popen[bytes]
    _lock: threading.RLock
    _session: Session[_Slot]
    _write_lock: threading.Lock
    _stderr_thread: threading.Thread
    _reader_thread: threading.Thread

    def _drain_stderr(self) -> None:
        _pump(self._proc.stderr, self._stderr.feed)
        self._stderr.finish()

    def _read_stdout(self) -> None:
        _pump(self._proc.stdout, lambda chunk: self._settle(self._session.receive(chunk)))
        self._settle(self._session.end_of_stream())
        self._on_eof()

    @staticmethod
    def _settle(settled: List[Tuple[_Slot, Outcome]]) -> None:
        for slot, outcome in settled:
            if isinstance(outcome, BaseException):
                slot.error = outcome
            else:
                slot.response = outcome
            slot.event.set()

    def _on_eof(self) -> None:
        try:
            returncode: Optional[int] = self._proc.wait(timeout=max(self.close_timeout, 1.0))
        except subprocess.TimeoutExpired:
            returncode = None
        self._stderr_thread.join(timeout=2.0)
        reason = "server closed its stdout" if returncode is None else "server exited"
        exited = server_exited(
            returncode, self._stderr.text(), reason=reason, server_error=self._session.server_error
        )
        with self._lock:
            self._exit = exited
            slots = self._session.take_all()
        self._settle([(slot, exited) for slot in slots])

    def _exited_error(self) -> ServerExited:
        """A fresh ServerExited once the reader saw EOF (waits for it briefly)."""
        self._reader_thread.join(timeout=max(self.close_timeout, 1.0) + 3.0)
        with self._lock:
            exited = self._exit
        if exited is None:
            return server_exited(
                self._proc.poll(),
                self._stderr.text(),
                reason="server pipe broken",
                server_error=self._session.server_error,
            )
        return exited.copy()

    def _write(self, data: bytes) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            with self._write_lock:
                stdin.write(data)
                stdin.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError) as exc:
            if self._closed and self._exit is None and self._proc.poll() is None:
                raise TransportError("Outbox is closed") from exc
            raise self._exited_error() from exc


def _pump(stream: Optional[IO[bytes]], feed: Callable[[bytes], None]) -> None:
    """Hands each chunk read from `stream` to `feed` until end of file or a closed pipe."""
    assert stream is not None
    try:
        while True:
            chunk = stream.read1(P.READ_CHUNK)  # type: ignore[attr-defined]
            if not chunk:
                break
            feed(chunk)
    except (OSError, ValueError):
        pass
