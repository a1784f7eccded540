"""Exceptions raised by the push-outbox client.

Hierarchy::

    OutboxError
    ├── RpcError                 a JSON-RPC error response (.code .message .data .method)
    │   ├── ParseError              -32700
    │   ├── InvalidRequest          -32600
    │   ├── MethodNotFound          -32601
    │   ├── InvalidParams           -32602  (.errors = data["errors"])
    │   ├── InternalError           -32603
    │   ├── RequestCancelled        -32800  (a long call cancelled by the client)
    │   └── ServerError             other -32000..-32099
    │       ├── StoreFull               -32001
    │       ├── ItemTooLarge            -32002
    │       ├── StorageUnavailable      -32003
    │       ├── LeaseNotFound           -32004
    │       ├── StartupError            the server refused to start (also a ServerExited)
    │       │   ├── StoreLocked             -32005  (another process holds the store; exit 3)
    │       │   ├── UnsupportedStoreVersion -32006  (exit 2)
    │       │   └── StartupFailed           -32007  (data.reason says why; exit 2 or 1)
    │       └── DeliveryNotConfigured   -32010
    ├── TransportError           the pipe to the server is unusable
    │   └── ServerExited            the server process is gone (.returncode .stderr_tail)
    │       └── StartupError            (see above: both an RpcError and a ServerExited)

A server that cannot start writes one start-up notice (an ``id: null`` error) and exits. Every call
made on it then raises that notice as its :class:`StartupError` subclass, carrying the exit too::

    try:
        with Outbox.spawn(store=path) as ob:
            ob.status()
    except StoreLocked as locked:
        print("in use by pid", locked.data["pid"], "- exit status", locked.returncode)

``except ServerExited`` still catches it (it is one), and ``.server_error`` is the error itself.
    ├── CallTimeout              (also a TimeoutError) no reply within the call's timeout
    └── BinaryNotFound           (also a FileNotFoundError) no push-outbox executable found
"""

from __future__ import annotations

import signal
from typing import Any, Dict, List, Mapping, Optional, Type

__all__ = [
    "OutboxError",
    "RpcError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "RequestCancelled",
    "ServerError",
    "StoreFull",
    "ItemTooLarge",
    "StorageUnavailable",
    "LeaseNotFound",
    "StartupError",
    "StoreLocked",
    "StartupFailed",
    "DeliveryNotConfigured",
    "UnsupportedStoreVersion",
    "TransportError",
    "ServerExited",
    "CallTimeout",
    "BinaryNotFound",
    "ERROR_CLASSES",
    "error_from_response",
    "server_exited",
]


class OutboxError(Exception):
    """Base class of every exception this package raises on purpose."""


class RpcError(OutboxError):
    """The server answered a request with a JSON-RPC error object."""

    #: The code this class stands for (``None`` on the base class: any code).
    CODE: Optional[int] = None

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        method: Optional[str] = None,
        request_id: Any = None,
    ) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        self.request_id = request_id
        where = f" (in {method})" if method else ""
        super().__init__(f"[{code}] {message}{where}")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
            f"data={self.data!r}, method={self.method!r})"
        )


class ParseError(RpcError):
    """-32700: the server could not parse the line (also: line longer than --max-line-bytes)."""

    CODE = -32700


class InvalidRequest(RpcError):
    """-32600: the JSON sent is not a valid Request object."""

    CODE = -32600


class MethodNotFound(RpcError):
    """-32601: no such method."""

    CODE = -32601


class InvalidParams(RpcError):
    """-32602: invalid params. ``errors`` lists every problem the server found."""

    CODE = -32602

    @property
    def errors(self) -> List[Dict[str, Any]]:
        """``error.data["errors"]``: ``[{"path", "code", "message", ...}, ...]`` (``[]`` if absent)."""
        if isinstance(self.data, Mapping):
            errors = self.data.get("errors")
            if isinstance(errors, list):
                return errors
        return []

    @property
    def codes(self) -> List[str]:
        """The stable ``code`` of every entry in :attr:`errors`, in order."""
        return [str(e.get("code")) for e in self.errors if isinstance(e, Mapping)]


class InternalError(RpcError):
    """-32603: the server failed while handling the call."""

    CODE = -32603


class RequestCancelled(RpcError):
    """-32800: a long call (``deliverPending``) answered early because the client cancelled it."""

    CODE = -32800


class ServerError(RpcError):
    """An implementation-defined server error (-32000..-32099)."""


class StoreFull(ServerError):
    """-32001: the store reached --max-pending / --max-pending-bytes."""

    CODE = -32001


class ItemTooLarge(ServerError):
    """-32002: the item exceeds --max-item-bytes."""

    CODE = -32002


class StorageUnavailable(ServerError):
    """-32003: the store could not be written."""

    CODE = -32003


class LeaseNotFound(ServerError):
    """-32004: unknown or expired flushId."""

    CODE = -32004


class DeliveryNotConfigured(ServerError):
    """-32010: ``deliverPending`` without ``--braze-endpoint`` or an API key."""

    CODE = -32010


class TransportError(OutboxError):
    """The connection to the server is unusable (closed, broken pipe, garbage on stdout)."""


class ServerExited(TransportError):
    """The server process exited (or closed stdout) before answering.

    ``returncode`` is the process exit status as :mod:`subprocess` reports it
    (negative for death by signal, e.g. -9 for SIGKILL; ``None`` if the process
    was still running when stdout closed). ``stderr_tail`` is the last bytes the
    server wrote to stderr (up to ~64 KiB), decoded as UTF-8 with replacement.
    ``server_error`` is the last error the server wrote to stdout that was not
    an answer to a request (``id: null``, e.g. :class:`StoreLocked` at
    startup), or ``None``.
    """

    def __init__(
        self,
        returncode: Optional[int],
        stderr_tail: str = "",
        *,
        reason: str = "server exited",
        server_error: Optional[RpcError] = None,
    ) -> None:
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        self.reason = reason
        self.server_error = server_error
        msg = f"{reason} (exit status {self._describe_status()})"
        if server_error is not None:
            msg += f"; server said {type(server_error).__name__} {server_error}"
        last = stderr_tail.strip()
        if last:
            tail = last[-2000:]
            msg += f"; stderr tail:\n{tail}"
        super().__init__(msg)

    @property
    def signal(self) -> Optional[int]:
        """The signal number that killed the server, if it died by a signal."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    def copy(self) -> ServerExited:
        """A fresh exception with the same information (each raise gets its own traceback)."""
        return ServerExited(
            self.returncode, self.stderr_tail, reason=self.reason, server_error=self.server_error
        )

    def _describe_status(self) -> str:
        if self.returncode is None:
            return "unknown"
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"{self.returncode}, killed by {name}"
        return str(self.returncode)


class StartupError(ServerError, ServerExited):
    """The server refused to start: the start-up notice it wrote (an ``id: null`` error,
    -32005, -32006 or -32007) before exiting. Every call on such a server raises it.

    It is both an :class:`RpcError` (``code``, ``message``, ``data``: ``data["reason"]`` says why)
    and a :class:`ServerExited` (``returncode``, the binary's exit status once it is known, and
    ``stderr_tail``, the sentence it wrote on stderr); ``server_error`` is the error itself.
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        method: Optional[str] = None,
        request_id: Any = None,
    ) -> None:
        # RpcError's fields, set here: its __init__ would go on to ServerExited's in this MRO.
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        self.request_id = request_id
        OutboxError.__init__(self, f"[{code}] {message} (server refused to start)")
        self.returncode: Optional[int] = None
        self.stderr_tail = ""
        self.reason = "server refused to start"
        self.server_error: Optional[RpcError] = self

    def exited(self, returncode: Optional[int], stderr_tail: str) -> StartupError:
        """A copy that also carries the server's exit: its status and the tail of its stderr."""
        error = type(self)(
            self.code, self.message, self.data, method=self.method, request_id=self.request_id
        )
        error.returncode = returncode
        error.stderr_tail = stderr_tail
        message = f"[{self.code}] {self.message} (server refused to start; exit status {error._describe_status()})"
        said = stderr_tail.strip().splitlines()
        if said:
            message += f": {said[-1][-2000:]}"
        error.args = (message,)
        return error

    def copy(self) -> StartupError:
        return self.exited(self.returncode, self.stderr_tail)


class StoreLocked(StartupError):
    """-32005: another process holds the store (``data["pid"]`` names it); the server exits 3."""

    CODE = -32005


class UnsupportedStoreVersion(StartupError):
    """-32006: the store was written by a newer format; nothing is touched; the server exits 2."""

    CODE = -32006


class StartupFailed(StartupError):
    """-32007: the server could not start (usage error, or a store it cannot use); ``data.reason`` says why."""

    CODE = -32007


def server_exited(
    returncode: Optional[int],
    stderr_tail: str,
    *,
    reason: str,
    server_error: Optional[RpcError],
) -> ServerExited:
    """The error calls fail with once the server is gone: its start-up notice when it refused to
    start (a :class:`StartupError`, with the exit), else a plain :class:`ServerExited`."""
    if isinstance(server_error, StartupError):
        return server_error.exited(returncode, stderr_tail)
    return ServerExited(returncode, stderr_tail, reason=reason, server_error=server_error)


ERROR_CLASSES: Dict[Optional[int], Type[RpcError]] = {
    cls.CODE: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestCancelled,
        StoreFull,
        ItemTooLarge,
        StorageUnavailable,
        LeaseNotFound,
        StoreLocked,
        UnsupportedStoreVersion,
        StartupFailed,
        DeliveryNotConfigured,
    )
}


def error_from_response(
    error: Any, *, method: Optional[str] = None, request_id: Any = None
) -> RpcError:
    """Build the right :class:`RpcError` subclass from a response's ``error`` member."""
    if not isinstance(error, Mapping):
        return RpcError(
            -32603, f"malformed error object: {error!r}", None, method=method, request_id=request_id
        )
    code = error.get("code")
    message = error.get("message")
    if not isinstance(message, str):
        message = str(message)
    data = error.get("data")
    if isinstance(code, bool) or not isinstance(code, int):
        return RpcError(
            -32603,
            f"malformed error code {code!r}: {message}",
            data,
            method=method,
            request_id=request_id,
        )
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        cls = ServerError if -32099 <= code <= -32000 else RpcError
    return cls(code, message, data, method=method, request_id=request_id)


class CallTimeout(OutboxError, TimeoutError):
    """No reply arrived within the call's timeout. A late reply is dropped."""

    def __init__(self, method: str, timeout: float, request_id: Any = None) -> None:
        self.method = method
        self.timeout = timeout
        self.request_id = request_id
        super().__init__(f"{method} (id {request_id}) got no reply within {timeout:g} s")


class BinaryNotFound(OutboxError, FileNotFoundError):
    """No push-outbox executable was found (see :func:`push_outbox.find_binary`)."""
