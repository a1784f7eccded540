"""Typed shapes of push-outbox params and results (see the wire spec).

These are :class:`typing.TypedDict` classes: at run time every result is the
plain ``dict`` decoded from JSON, so nothing is lost or converted. Keys that the
server may omit are declared in ``total=False`` base classes.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Literal, Optional, TypedDict, Union

from ._status_types import (
    DeadLetter as DeadLetter,
)
from ._status_types import (
    DeadLetterList as DeadLetterList,
)
from ._status_types import (
    DeliverResult as DeliverResult,
)
from ._status_types import (
    DeliveryStatus as DeliveryStatus,
)
from ._status_types import (
    DropResult as DropResult,
)
from ._status_types import (
    FleetStatus as FleetStatus,
)
from ._status_types import (
    HealthProblem as HealthProblem,
)
from ._status_types import (
    ImportFailure as ImportFailure,
)
from ._status_types import (
    ImportOutcome as ImportOutcome,
)
from ._status_types import (
    ImportResult as ImportResult,
)
from ._status_types import (
    LeaseInfo as LeaseInfo,
)
from ._status_types import (
    LegacyList as LegacyList,
)
from ._status_types import (
    PendingCounts as PendingCounts,
)
from ._status_types import (
    RecoveryEntry as RecoveryEntry,
)
from ._status_types import (
    RelayStatus as RelayStatus,
)
from ._status_types import (
    RequeueResult as RequeueResult,
)
from ._status_types import (
    StatusResult as StatusResult,
)

__all__ = [
    "WorkDoneProgress",
    "ProgressCallback",
    "JSONValue",
    "ExternalIdUser",
    "BrazeIdUser",
    "AliasName",
    "AliasUser",
    "EmailUser",
    "PhoneUser",
    "User",
    "FieldType",
    "AttributeOp",
    "FlushFormat",
    "ItemKind",
    "Alert",
    "Attachment",
    "PayloadWarning",
    "ParsePayloadResult",
    "SaveWarning",
    "SaveResult",
    "Item",
    "FlushResult",
    "UsersTrackRequest",
    "SkippedItem",
    "UsersTrackFlushResult",
    "AckResult",
    "ReleaseResult",
    "PendingCounts",
    "LeaseInfo",
    "RecoveryEntry",
    "StatusResult",
    "HealthProblem",
    "DeliveryStatus",
    "FleetStatus",
    "RelayStatus",
    "DeliverResult",
    "DeadLetter",
    "DeadLetterList",
    "RequeueResult",
    "DropResult",
    "LegacyList",
    "ImportFailure",
    "ImportOutcome",
    "ImportResult",
    "ParamError",
]

JSONValue = Any
"""Any JSON value (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` or ``None``)."""


# --- user identifier: exactly one of these shapes --------------------------------------------


class ExternalIdUser(TypedDict):
    externalId: str


class BrazeIdUser(TypedDict):
    brazeId: str


class AliasName(TypedDict):
    name: str
    label: str


class AliasUser(TypedDict):
    alias: AliasName


class EmailUser(TypedDict):
    email: str


class PhoneUser(TypedDict):
    phone: str


User = Union[ExternalIdUser, BrazeIdUser, AliasUser, EmailUser, PhoneUser]
"""The ``user`` param: exactly one of ``externalId``, ``brazeId``, ``alias``, ``email``, ``phone``."""

FieldType = Literal[
    "string", "integer", "number", "boolean", "object", "array", "url", "date", "datetime"
]
AttributeOp = Literal["set", "inc", "add", "remove", "unset"]
FlushFormat = Literal["items", "usersTrack"]
ItemKind = Literal["customEvent", "customAttribute", "userAttribute"]


# --- parsePayload ---------------------------------------------------------------------------


class Alert(TypedDict):
    title: Optional[str]
    subtitle: Optional[str]
    body: Optional[str]


class Attachment(TypedDict):
    url: str
    type: Optional[str]


class _PayloadWarningBase(TypedDict):
    code: str
    message: str


class PayloadWarning(_PayloadWarningBase, total=False):
    key: str


class _PayloadDiagnosticBase(TypedDict):
    code: str
    severity: Literal["error", "warning", "information", "hint"]
    path: str
    message: str


class PayloadDiagnostic(_PayloadDiagnosticBase, total=False):
    """One finding of the payload rule table, as `push-outbox lsp` reports it in an editor."""

    start: int
    end: int
    href: str


class ParsePayloadResult(TypedDict):
    braze: bool
    silent: bool
    internal: bool
    pushStory: bool
    category: Optional[str]
    threadId: Optional[str]
    mutableContent: bool
    alert: Optional[Alert]
    badge: Optional[int]
    sound: Optional[str]
    deepLink: Optional[str]
    attachment: Optional[Attachment]
    brazeId: Optional[str]
    extras: Dict[str, JSONValue]
    values: Dict[str, JSONValue]
    warnings: List[PayloadWarning]
    diagnostics: List[PayloadDiagnostic]


# --- saves ----------------------------------------------------------------------------------


class SaveWarning(TypedDict):
    code: str
    path: str
    message: str


class _SaveResultBase(TypedDict):
    id: str
    seq: int
    pending: int


class SaveResult(_SaveResultBase, total=False):
    duplicate: bool
    warnings: List[SaveWarning]


# --- flush ----------------------------------------------------------------------------------


class _ItemBase(TypedDict):
    id: str
    seq: int
    kind: ItemKind
    savedAt: str
    deliveryCount: int


class Item(_ItemBase, total=False):
    """One pending item. Which of the kind-specific keys are present depends on ``kind``."""

    user: User
    superseded: bool
    # customEvent
    name: str
    properties: Dict[str, JSONValue]
    time: str
    # customAttribute
    key: str
    op: AttributeOp
    value: JSONValue
    # userAttribute
    field: str


class _FlushResultBase(TypedDict):
    flushId: str
    items: List[Item]
    remaining: int


class FlushResult(_FlushResultBase, total=False):
    """``flushPending`` with ``format="items"`` (the default). ``leaseExpiresAt`` only with ``leaseMs``."""

    leaseExpiresAt: str


class UsersTrackRequest(TypedDict):
    attributes: List[Dict[str, JSONValue]]
    events: List[Dict[str, JSONValue]]


class SkippedItem(TypedDict):
    id: str
    reason: str


class _UsersTrackFlushResultBase(TypedDict):
    flushId: str
    requests: List[UsersTrackRequest]
    skipped: List[SkippedItem]
    remaining: int


class UsersTrackFlushResult(_UsersTrackFlushResultBase, total=False):
    """``flushPending`` with ``format="usersTrack"``."""

    leaseExpiresAt: str


class AckResult(TypedDict):
    acked: int


class ReleaseResult(TypedDict):
    released: int


# --- errors ---------------------------------------------------------------------------------


class _ParamErrorBase(TypedDict):
    path: str
    code: str
    message: str


class ParamError(_ParamErrorBase, total=False):
    """One entry of ``InvalidParams.errors``. parsePayload ``require`` failures add the other keys."""

    key: str
    expected: str
    got: str


class WorkDoneProgress(TypedDict, total=False):
    """The ``value`` of one ``$/progress`` notification for a long call (Protocol/README.md,
    "Long calls"): ``kind`` is ``begin`` (with ``title`` and ``cancellable``), ``report``, then ``end``."""

    kind: Literal["begin", "report", "end"]
    title: str
    cancellable: bool
    message: str
    percentage: int


#: Called with each progress value of a call, on the client's reader thread (sync) or in its
#: reader task (asyncio); it should return quickly.
ProgressCallback = Callable[[WorkDoneProgress], None]
