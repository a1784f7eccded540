"""The sans-I/O protocol core that :class:`Outbox` and :class:`AsyncOutbox` share.

It owns the framing of stdout into lines, the pending-call table and the routing of replies
(including the id-null rule of Protocol/README.md, "Errors with id null"). It does no I/O and
starts no threads or tasks: a client registers a *waiter* (a threading slot, an asyncio future)
per call, feeds in the bytes it read, and settles the waiters it is handed back. ``ClientBase``
holds the state both clients keep alike (argv, timeouts, closed, the server's exit, its stderr).
"""

from __future__ import annotations

import contextlib
import logging
from typing import (
    Any,
    Callable,
    ContextManager,
    Dict,
    Generic,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from . import _protocol as P
from ._process import StderrSink
from .errors import RpcError, ServerExited, TransportError, error_from_response
from .types import ProgressCallback, WorkDoneProgress

__all__ = ["ClientBase", "Outcome", "Session", "result_of"]

log = logging.getLogger("push_outbox")

W = TypeVar("W")
#: What a waiter is settled with: the response object, or the exception the call fails with.
Outcome = Union[Dict[str, Any], BaseException]


class Session(Generic[W]):
    """Framing, pending table and reply routing for one server connection."""

    def __init__(self, lock: Optional[ContextManager[Any]] = None) -> None:
        # The sync client passes its (reentrant) lock: calls register from many threads.
        self._lock: ContextManager[Any] = lock if lock is not None else contextlib.nullcontext()
        self._ids = P.IdAllocator()
        self._pending: Dict[int, W] = {}
        #: Pending calls that may be answered after later ones (P.LONG_METHODS).
        self._long: Set[int] = set()
        #: Progress callbacks of pending calls, by their work-done token (the call's id).
        self._progress: Dict[int, ProgressCallback] = {}
        self._buffer = bytearray()
        #: The last id-null error that answered no call (a start-up notice such as -32005).
        self.server_error: Optional[RpcError] = None

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def open_call(
        self, method: str, params: P.Params, waiter: W, progress: Optional[ProgressCallback] = None
    ) -> Tuple[int, bytes]:
        """Registers *waiter* under a new id and returns the id and the request line to write.

        With *progress*, the request carries ``workDoneToken`` (the call's id) and the server's
        ``$/progress`` notifications for it are handed to *progress*.
        """
        request_id = self._ids.next()
        if progress is not None:
            if params is not None and not isinstance(params, Mapping):
                raise TypeError("progress needs params by name (a mapping)")
            params = {**(params or {}), "workDoneToken": request_id}
        data = P.encode_request(request_id, method, params)  # a bad param raises before registering
        with self._lock:
            self._pending[request_id] = waiter
            if method in P.LONG_METHODS:
                self._long.add(request_id)
            if progress is not None:
                self._progress[request_id] = progress
        return request_id, data

    def forget(self, request_id: int) -> None:
        """Drops a call that timed out, was cancelled or could not be written."""
        with self._lock:
            self._pending.pop(request_id, None)
            self._long.discard(request_id)
            self._progress.pop(request_id, None)

    def take_all(self) -> List[W]:
        """Removes and returns every pending waiter (the server has gone)."""
        with self._lock:
            waiters = list(self._pending.values())
            self._pending.clear()
        return waiters

    def receive(self, chunk: bytes) -> List[Tuple[W, Outcome]]:
        """Feeds bytes read from stdout; returns the waiters answered by the complete lines."""
        self._buffer += chunk
        settled: List[Tuple[W, Outcome]] = []
        for line in P.split_lines(self._buffer):
            settled += self._route(line)
        return settled

    def end_of_stream(self) -> List[Tuple[W, Outcome]]:
        """Stdout ended: a last line without a newline still counts."""
        if not self._buffer:
            return []
        line = bytes(self._buffer)
        self._buffer.clear()
        return self._route(line)

    def _route(self, line: bytes) -> List[Tuple[W, Outcome]]:
        try:
            responses = P.decode_line(line)
        except TransportError as exc:
            log.error("%s", exc)
            return [(waiter, TransportError(str(exc))) for waiter in self.take_all()]
        settled: List[Tuple[W, Outcome]] = []
        for response in responses:
            if P.is_notification(response):
                self._on_notification(response)
                continue
            with self._lock:
                rid = P.match_id(response, list(self._pending), self._long)
                target = self._pending.pop(rid) if rid is not None else None
                if rid is not None:
                    self._long.discard(rid)
                    self._progress.pop(rid, None)
            if target is not None:
                settled.append((target, response))
            elif P.is_server_notice(response):
                self.server_error = error_from_response(response["error"])
                log.warning("push-outbox server error: %s", self.server_error)
            else:
                log.debug("push-outbox: dropping unmatched response %r", response)
        return settled

    def _on_notification(self, message: Dict[str, Any]) -> None:
        """A ``$/progress`` for a pending call goes to its callback (on the reading thread or task)."""
        params = message.get("params")
        if message.get("method") != P.PROGRESS_METHOD or not isinstance(params, dict):
            log.debug("push-outbox: ignoring notification %r", message)
            return
        token = params.get("token")
        with self._lock:
            callback = self._progress.get(token) if isinstance(token, int) else None
        if callback is None:
            log.debug("push-outbox: progress for no pending call: %r", message)
            return
        try:
            callback(cast(WorkDoneProgress, params.get("value")))
        except Exception:  # a callback's bug must not stop the reader
            log.exception("push-outbox: progress callback raised")


def result_of(response: Dict[str, Any], method: str, request_id: int) -> Any:
    """The result of a response, or the typed error it carries, raised."""
    if "error" in response:
        raise error_from_response(response["error"], method=method, request_id=request_id)
    return response.get("result")


class ClientBase:
    """What :class:`Outbox` and :class:`AsyncOutbox` keep alike: the argv, the default timeouts,
    the closed flag, the server's exit once seen, and its stderr."""

    #: The client's name in "... is closed".
    _kind = "Outbox"

    def __init__(
        self,
        argv: Sequence[str],
        timeout: Optional[float],
        close_timeout: float,
        stderr_handler: Optional[Callable[[str], None]],
    ) -> None:
        self.argv: List[str] = list(argv)
        self.timeout = timeout
        self.close_timeout = close_timeout
        self._closed = False
        self._exit: Optional[ServerExited] = None  # set once stdout reached EOF
        self._stderr = StderrSink(stderr_handler)

    @property
    def stderr_tail(self) -> str:
        """The last ~64 KiB the server wrote to stderr."""
        return self._stderr.text()

    @property
    def closed(self) -> bool:
        return self._closed

    def _call_timeout(self, timeout: Optional[float]) -> Optional[float]:
        """A call's own timeout, or the client's when it gave none (``MISSING``)."""
        return self.timeout if timeout is P.MISSING else timeout

    def _fresh_exit(self) -> ServerExited:
        """A copy of the server's exit, for one more caller to raise."""
        exited = self._exit
        assert exited is not None
        return exited.copy()

    def _raise_if_unusable(self) -> None:
        """Fails a new call or notification at once after the server exited or :meth:`close`."""
        if self._exit is not None:
            raise self._fresh_exit()
        if self._closed:
            raise TransportError(f"{self._kind} is closed")
