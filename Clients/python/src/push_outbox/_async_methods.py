"""The typed methods of AsyncOutbox: one per wire method, each a thin wrapper over ``call``
(params built by ``_protocol``; the method table is ``openrpc.json``)."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, Union, cast, overload

from . import _params
from . import _protocol as P
from .types import (
    AckResult,
    AttributeOp,
    DeadLetterList,
    DeliverResult,
    DropResult,
    FieldType,
    FlushFormat,
    FlushResult,
    ImportResult,
    ParsePayloadResult,
    ReleaseResult,
    RequeueResult,
    SaveResult,
    StatusResult,
    User,
    UsersTrackFlushResult,
)

__all__ = ["AsyncMethods"]


class AsyncMethods:
    """Typed methods; the class using it provides ``call``."""

    async def call(
        self, method: str, params: P.Params = None, *, timeout: Optional[float] = P.MISSING
    ) -> Any:
        raise NotImplementedError

    async def parse_payload(
        self,
        payload: Union[Mapping[str, Any], str],
        *,
        require: Optional[Mapping[str, FieldType]] = None,
        categories: Optional[Sequence[str]] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> ParsePayloadResult:
        params = _params.params_parse_payload(payload, require, categories)
        return cast(ParsePayloadResult, await self.call("parsePayload", params, timeout=timeout))

    async def save_custom_event(
        self,
        name: str,
        properties: Optional[Mapping[str, Any]] = None,
        *,
        time: Union[str, _dt.datetime, None] = None,
        user: Optional[User] = None,
        id: Optional[str] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> SaveResult:
        params = _params.params_save_custom_event(name, properties, time, user, id)
        return cast(SaveResult, await self.call("saveCustomEvent", params, timeout=timeout))

    async def save_custom_attribute(
        self,
        key: str,
        value: Any = P.MISSING,
        *,
        op: Optional[AttributeOp] = None,
        user: Optional[User] = None,
        id: Optional[str] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> SaveResult:
        params = _params.params_save_custom_attribute(key, value, op, user, id)
        return cast(SaveResult, await self.call("saveCustomAttribute", params, timeout=timeout))

    async def save_user_attribute(
        self,
        field: str,
        value: Optional[str],
        *,
        user: Optional[User] = None,
        id: Optional[str] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> SaveResult:
        params = _params.params_save_user_attribute(field, value, user, id)
        return cast(SaveResult, await self.call("saveUserAttribute", params, timeout=timeout))

    @overload
    async def flush_pending(
        self,
        *,
        max: Optional[int] = None,
        format: Literal["usersTrack"],
        lease_ms: Optional[int] = None,
        default_user: Optional[User] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> UsersTrackFlushResult: ...

    @overload
    async def flush_pending(
        self,
        *,
        max: Optional[int] = None,
        format: Optional[Literal["items"]] = None,
        lease_ms: Optional[int] = None,
        default_user: Optional[User] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> FlushResult: ...

    @overload
    async def flush_pending(
        self,
        *,
        max: Optional[int] = None,
        format: Optional[FlushFormat] = None,
        lease_ms: Optional[int] = None,
        default_user: Optional[User] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> Union[FlushResult, UsersTrackFlushResult]: ...

    async def flush_pending(
        self,
        *,
        max: Optional[int] = None,
        format: Optional[FlushFormat] = None,
        lease_ms: Optional[int] = None,
        default_user: Optional[User] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> Union[FlushResult, UsersTrackFlushResult]:
        params = _params.params_flush_pending(max, format, lease_ms, default_user)
        return cast(
            Union[FlushResult, UsersTrackFlushResult],
            await self.call("flushPending", params, timeout=timeout),
        )

    async def ack_flush(self, flush_id: str, *, timeout: Optional[float] = P.MISSING) -> AckResult:
        return cast(AckResult, await self.call("ackFlush", {"flushId": flush_id}, timeout=timeout))

    async def release_flush(
        self, flush_id: str, *, timeout: Optional[float] = P.MISSING
    ) -> ReleaseResult:
        return cast(
            ReleaseResult, await self.call("releaseFlush", {"flushId": flush_id}, timeout=timeout)
        )

    async def deliver_pending(
        self, *, max: Optional[int] = None, timeout: Optional[float] = P.MISSING
    ) -> DeliverResult:
        """``deliverPending``: one delivery pass to Braze; answers when it is done."""
        params: Dict[str, Any] = {} if max is None else {"max": max}
        return cast(DeliverResult, await self.call("deliverPending", params, timeout=timeout))

    async def list_dead_letters(
        self, *, max: Optional[int] = None, timeout: Optional[float] = P.MISSING
    ) -> DeadLetterList:
        """``listDeadLetters``: items Braze refused (or with no identifier), with the reason."""
        params: Dict[str, Any] = {} if max is None else {"max": max}
        return cast(DeadLetterList, await self.call("listDeadLetters", params, timeout=timeout))

    async def requeue_dead_letters(
        self, ids: Optional[Sequence[str]] = None, *, timeout: Optional[float] = P.MISSING
    ) -> RequeueResult:
        """``requeueDeadLetters``: make these dead letters (all when ``ids`` is None) pending again."""
        params: Dict[str, Any] = {} if ids is None else {"ids": list(ids)}
        return cast(RequeueResult, await self.call("requeueDeadLetters", params, timeout=timeout))

    async def drop_dead_letters(
        self, ids: Sequence[str], *, timeout: Optional[float] = P.MISSING
    ) -> DropResult:
        """``dropDeadLetters``: delete these dead letters for good."""
        return cast(
            DropResult, await self.call("dropDeadLetters", {"ids": list(ids)}, timeout=timeout)
        )

    async def import_legacy(
        self,
        defaults: Optional[Mapping[str, Any]] = None,
        *,
        pending_custom_events: Optional[Sequence[Any]] = None,
        pending_custom_attributes: Optional[Sequence[Any]] = None,
        pending_user_attributes: Optional[Sequence[Any]] = None,
        user: Optional[User] = None,
        timeout: Optional[float] = P.MISSING,
    ) -> ImportResult:
        """``importLegacy``: the pending analytics of Braze's push guide, from its App Group.

        ``defaults`` is the App Group's ``UserDefaults`` as ``plutil -convert json`` gives it (only
        the three ``pending_*`` keys are read); a list given by keyword replaces the one there. Each
        element is checked by its save method: the valid are saved, the rest come back with their
        ``error`` in ``results`` (never raised). Raises ``InvalidParams`` for the call as a whole (a
        list that is not an array, more than ``--max-batch`` elements, a bad ``user``).
        """
        lists = {
            "pending_custom_events": pending_custom_events,
            "pending_custom_attributes": pending_custom_attributes,
            "pending_user_attributes": pending_user_attributes,
        }
        params = _params.params_import_legacy(defaults, lists, user)
        return cast(ImportResult, await self.call("importLegacy", params, timeout=timeout))

    async def status(self, *, timeout: Optional[float] = P.MISSING) -> StatusResult:
        return cast(StatusResult, await self.call("status", {}, timeout=timeout))

    async def discover(self, *, timeout: Optional[float] = P.MISSING) -> Dict[str, Any]:
        return cast(Dict[str, Any], await self.call("rpc.discover", {}, timeout=timeout))
