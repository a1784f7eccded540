"""Python client for push-outbox, a JSON-RPC 2.0 service over line-delimited stdio.

Sync::

    from push_outbox import Outbox

    with Outbox.spawn(store="/tmp/outbox") as ob:
        ob.save_custom_event("push_opened", properties={"step": 1})
        batch = ob.flush_pending()

asyncio::

    from push_outbox import AsyncOutbox

    async with AsyncOutbox.spawn(memory=True) as ob:
        await ob.save_custom_event("push_opened")
"""

import logging

from ._discovery import BINARY_NAME, ENV_BINARY, find_binary
from ._protocol import DEFAULT_TIMEOUT, MISSING, WIRE_METHODS, WIRE_PARAMS
from .aio import AsyncOutbox
from .client import Outbox, PendingCall
from .errors import (
    ERROR_CLASSES,
    BinaryNotFound,
    CallTimeout,
    DeliveryNotConfigured,
    InternalError,
    InvalidParams,
    InvalidRequest,
    ItemTooLarge,
    LeaseNotFound,
    MethodNotFound,
    OutboxError,
    ParseError,
    RequestCancelled,
    RpcError,
    ServerError,
    ServerExited,
    StartupError,
    StartupFailed,
    StorageUnavailable,
    StoreFull,
    StoreLocked,
    TransportError,
    UnsupportedStoreVersion,
    error_from_response,
)
from .types import ProgressCallback, WorkDoneProgress

__version__ = "0.2.0"

# The client writes nothing to stderr by itself: its log records ("push_outbox" logger) go only
# where the application's logging configuration sends them (without one, Python's last-resort
# handler would print warnings to stderr).
logging.getLogger("push_outbox").addHandler(logging.NullHandler())

__all__ = [
    "Outbox",
    "AsyncOutbox",
    "PendingCall",
    "ProgressCallback",
    "WorkDoneProgress",
    "find_binary",
    "BINARY_NAME",
    "ENV_BINARY",
    "DEFAULT_TIMEOUT",
    "MISSING",
    "WIRE_METHODS",
    "WIRE_PARAMS",
    "ERROR_CLASSES",
    "error_from_response",
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
    "StoreLocked",
    "UnsupportedStoreVersion",
    "StartupError",
    "StartupFailed",
    "DeliveryNotConfigured",
    "TransportError",
    "ServerExited",
    "CallTimeout",
    "BinaryNotFound",
    "__version__",
]
