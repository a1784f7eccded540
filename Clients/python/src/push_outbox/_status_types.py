"""Typed results of status, deliverPending, the dead-letter methods and importLegacy.

Re-exported by :mod:`push_outbox.types`; import them from there.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict

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


class _DeliveryStatusRequired(TypedDict):
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


class FleetStream(TypedDict):
    name: str
    messages: int
    bytes: int


class FleetStatus(TypedDict):
    """``status.delivery.fleet`` with ``--deliver --from nats://…``."""

    state: Literal["connecting", "connected", "stopped"]
    role: Literal["leader", "standby"]
    leaderSince: Optional[str]
    stream: FleetStream
    delivered: int
    deadLettered: int
    givenBack: int
    lastError: Optional[str]


class DeliveryStatus(_DeliveryStatusRequired, total=False):
    """``status.delivery`` when delivery to Braze is configured; ``fleet`` only with
    ``--deliver --from nats://…``."""

    fleet: FleetStatus


class RelayStatus(TypedDict):
    """``status.relay`` with ``--relay nats://…``."""

    to: str
    stream: str
    state: Literal["connecting", "connected", "backoff"]
    published: int
    duplicates: int
    deadLettered: int
    inFlight: int
    lastError: Optional[str]
    lastPublishAt: Optional[str]


class HealthProblem(TypedDict):
    """One entry of ``status.problems``."""

    reason: Literal[
        "journal_failing",
        "data_quarantined",
        "store_near_cap",
        "delivery_stopped",
        "delivery_retrying",
        "pending_too_old",
    ]
    since: str
    detail: str


class StatusResult(TypedDict):
    health: Literal["ok", "degraded", "failing"]
    problems: List[HealthProblem]
    version: str
    store: Optional[str]
    pending: PendingCounts
    bytes: int
    lastSnapshotAt: Optional[str]
    snapshotSeq: int
    journalBytes: int
    storeBytes: int
    maxStoreBytes: Optional[int]
    fsync: str
    lease: Optional[LeaseInfo]
    recovery: List[RecoveryEntry]
    deadLetters: int
    delivery: Optional[DeliveryStatus]
    relay: Optional[RelayStatus]


class DeliverResult(TypedDict):
    """``deliverPending``: one delivery pass."""

    delivered: int
    deadLettered: int
    retrying: int
    remaining: int


class _DeadLetterRequired(TypedDict):
    reason: str
    item: Dict[str, Any]


class DeadLetter(_DeadLetterRequired, total=False):
    """``seq``: with ``fleet=True``, the message's sequence in ``<stream>_DEAD``."""

    seq: int


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
