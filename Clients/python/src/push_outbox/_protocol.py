"""Sans-I/O core shared by the sync and asyncio clients.

Encoding, id allocation, line decoding and splitting, and response matching rules.
Param building for the typed methods is in :mod:`._params`; process helpers in :mod:`._process`.
"""

from __future__ import annotations

import json
import threading
from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import TransportError

__all__ = [
    "WIRE_METHODS",
    "WIRE_PARAMS",
    "DEFAULT_TIMEOUT",
    "DEFAULT_CLOSE_TIMEOUT",
    "STDERR_TAIL_BYTES",
    "MISSING",
]

#: Wire method name -> Python method name on :class:`Outbox` / :class:`AsyncOutbox`.
WIRE_METHODS: Dict[str, str] = {
    "parsePayload": "parse_payload",
    "saveCustomEvent": "save_custom_event",
    "saveCustomAttribute": "save_custom_attribute",
    "saveUserAttribute": "save_user_attribute",
    "flushPending": "flush_pending",
    "ackFlush": "ack_flush",
    "releaseFlush": "release_flush",
    "status": "status",
    "deliverPending": "deliver_pending",
    "listDeadLetters": "list_dead_letters",
    "requeueDeadLetters": "requeue_dead_letters",
    "dropDeadLetters": "drop_dead_letters",
    "importLegacy": "import_legacy",
    "rpc.discover": "discover",
    "$/cancelRequest": "cancel",
    "notifications/cancelled": "notify_cancelled",
}

#: Wire method name -> every param name the typed Python method can send.
WIRE_PARAMS: Dict[str, Tuple[str, ...]] = {
    "parsePayload": ("payload", "require", "categories"),
    "saveCustomEvent": ("name", "properties", "time", "user", "id"),
    "saveCustomAttribute": ("key", "value", "op", "user", "id"),
    "saveUserAttribute": ("field", "value", "user", "id"),
    "flushPending": ("max", "format", "leaseMs", "defaultUser"),
    "ackFlush": ("flushId",),
    "releaseFlush": ("flushId",),
    "status": (),
    "deliverPending": ("max", "workDoneToken", "_meta"),
    "listDeadLetters": ("max", "fleet"),
    "requeueDeadLetters": ("ids", "fleet"),
    "dropDeadLetters": ("ids", "fleet"),
    "importLegacy": (
        "pending_custom_events",
        "pending_custom_attributes",
        "pending_user_attributes",
        "user",
    ),
    "rpc.discover": (),
    "$/cancelRequest": ("id",),
    "notifications/cancelled": ("requestId", "reason"),
}

#: Calls the id-null rule skips: long calls whose line is never refused (Protocol/README.md,
#: "Errors with id null"; a large importLegacy is long too, but its line may be the refused one).
LONG_METHODS = frozenset({"deliverPending"})
#: The notification that cancels a long call, and the one that reports its progress.
CANCEL_METHOD = "$/cancelRequest"
PROGRESS_METHOD = "$/progress"

DEFAULT_TIMEOUT = 30.0
DEFAULT_CLOSE_TIMEOUT = 5.0
TERM_TIMEOUT = 2.0
STDERR_TAIL_BYTES = 64 * 1024
READ_CHUNK = 1 << 16


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


#: Sentinel for "param not given" where ``None`` is a meaningful value (JSON null).
MISSING: Any = _Missing()

Params = Union[Mapping[str, Any], Sequence[Any], None]


# --- encoding / decoding ---------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def encode(message: Mapping[str, Any]) -> bytes:
    """One compact JSON line (``\\n``-terminated, UTF-8). NaN/Infinity and lone surrogates raise ValueError."""
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "strict") + b"\n"


def _check_params(params: Params) -> Any:
    if params is None:
        return None
    if isinstance(params, Mapping):
        return dict(params)
    if isinstance(params, (list, tuple)):
        return list(params)
    raise TypeError(f"params must be a mapping, a list/tuple or None, not {type(params).__name__}")


def encode_request(request_id: int, method: str, params: Params) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    checked = _check_params(params)
    if checked is not None:
        message["params"] = checked
    return encode(message)


def encode_notification(method: str, params: Params) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    checked = _check_params(params)
    if checked is not None:
        message["params"] = checked
    return encode(message)


def decode_line(line: bytes) -> List[Dict[str, Any]]:
    """Decode one stdout line (without its ``\\n``) into response objects (or notifications).

    A batch reply (JSON array) yields each member. Empty lines yield nothing.
    Raises :class:`TransportError` for anything that is not JSON-RPC output.
    """
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip():
        return []
    try:
        value = json.loads(line.decode("utf-8", "strict"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise TransportError(
            f"server wrote a non-JSON line to stdout: {line[:200]!r} ({exc})"
        ) from None
    members = value if isinstance(value, list) else [value]
    for member in members:
        if not isinstance(member, dict) or not (
            "result" in member or "error" in member or is_notification(member)
        ):
            raise TransportError(f"server wrote a non-response message: {line[:200]!r}")
    return members


def is_notification(message: Mapping[str, Any]) -> bool:
    """A message the server sends unasked (a long call's progress): a method and no id."""
    return isinstance(message.get("method"), str) and "id" not in message


class IdAllocator:
    """The client's own small integer ids: 1, 2, 3, ... (thread-safe)."""

    def __init__(self) -> None:
        self._next = 1
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            value = self._next
            self._next += 1
            return value


def match_id(
    response: Mapping[str, Any],
    pending_ids: Sequence[int],
    long_ids: AbstractSet[int] = frozenset(),
) -> Optional[int]:
    """Which pending request a response answers.

    A response with our integer id answers that request. A ``-32700`` /
    ``-32600`` error with ``id: null`` (the server could not read the id of a
    line, e.g. one longer than --max-line-bytes) is attributed to the oldest
    pending request that is not a long call (*long_ids*): the server answers
    every other line in order, so that is the request whose line it rejected.
    Any other ``id: null`` error is not about a request (e.g. a startup failure
    such as -32005 store locked, written just before the server exits); it
    matches nothing (see :func:`is_server_notice`).
    """
    rid = response.get("id")
    if isinstance(rid, int) and not isinstance(rid, bool):
        return rid if rid in pending_ids else None
    ordered = [i for i in pending_ids if i not in long_ids]
    if rid is None and ordered and _null_id_code(response) in REQUEST_LEVEL_CODES:
        return min(ordered)
    return None


#: Errors the server answers with ``id: null`` when it cannot read a request's id.
REQUEST_LEVEL_CODES = (-32700, -32600)


def _null_id_code(response: Mapping[str, Any]) -> Any:
    error = response.get("error")
    return error.get("code") if isinstance(error, Mapping) else None


def is_server_notice(response: Mapping[str, Any]) -> bool:
    """An ``id: null`` error that is about the server itself, not about one request line."""
    return (
        response.get("id") is None
        and "error" in response
        and _null_id_code(response) not in REQUEST_LEVEL_CODES
    )


def split_lines(buffer: bytearray) -> List[bytes]:
    """Remove and return every complete ``\\n``-terminated line in *buffer* (without the ``\\n``).

    Splits on ``b"\\n"`` only (never ``str.splitlines``: U+2028 is legal inside JSON strings).
    """
    lines: List[bytes] = []
    start = 0
    while True:
        end = buffer.find(b"\n", start)
        if end < 0:
            break
        lines.append(bytes(buffer[start:end]))
        start = end + 1
    if start:
        del buffer[:start]
    return lines
