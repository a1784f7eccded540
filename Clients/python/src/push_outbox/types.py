"""Typed shapes of push-outbox params and results (see the wire spec).

These are :class:`typing.TypedDict` classes: at run time every result is the
plain ``dict`` decoded from JSON, so nothing is lost or converted. Keys that the
server may omit are declared in ``total=False`` base classes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

__all__ = [
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
    "DeliveryStatus",
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


# --- status ---------------------------------------------------------------------------------


class PendingCounts(TypedDict):
    total: int
    customEvent: int
    customAttribute: int
    userAttribute: int


class LeaseInfo(TypedDict):
    flushId: str
    count: int
    expiresAt: str


class RecoveryEntry(TypedDict, total=False):
    code: str
    message: str


class DeliveryStatus(TypedDict):
    """``status.delivery`` when delivery to Braze is configured."""

    background: bool
    delivered: int
    inFlight: int
    retrying: int
    nextAttemptAt: Optional[str]
    deadLettered: int
    lastError: Optional[str]
    configError: Optional[str]
    rate: str
    recentRequests: int


class StatusResult(TypedDict):
    version: str
    store: Optional[str]
    pending: PendingCounts
    bytes: int
    lastSnapshotAt: Optional[str]
    snapshotSeq: int
    journalBytes: int
    fsync: str
    lease: Optional[LeaseInfo]
    recovery: List[RecoveryEntry]
    deadLetters: int
    delivery: Optional[DeliveryStatus]


class DeliverResult(TypedDict):
    """``deliverPending``: one delivery pass."""

    delivered: int
    deadLettered: int
    retrying: int
    remaining: int


class DeadLetter(TypedDict):
    reason: str
    item: Dict[str, Any]


class DeadLetterList(TypedDict):
    deadLetters: List[DeadLetter]
    total: int


class RequeueResult(TypedDict):
    requeued: int


class DropResult(TypedDict):
    dropped: int


LegacyList = Literal[
    "pending_custom_events", "pending_custom_attributes", "pending_user_attributes"
]
"""The three App Group ``UserDefaults`` keys of Braze's push guide (``RemoteStorageKey``)."""


class _ImportErrorBase(TypedDict):
    code: int
    message: str


class ImportFailure(_ImportErrorBase, total=False):
    """The error an element got: what its save method answers (``data.errors`` for -32602)."""

    data: Dict[str, Any]


class _ImportOutcomeBase(TypedDict):
    list: LegacyList
    index: int
    method: Literal["saveCustomEvent", "saveCustomAttribute", "saveUserAttribute"]


class ImportOutcome(_ImportOutcomeBase, total=False):
    """One element of ``importLegacy``: ``ids`` when it was saved, else ``error``."""

    ids: List[str]
    key: str
    error: ImportFailure
    warnings: List[Dict[str, Any]]


class ImportResult(TypedDict):
    """``importLegacy``: one outcome per element, and the totals."""

    results: List[ImportOutcome]
    saved: int
    failed: int
    pending: int


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
