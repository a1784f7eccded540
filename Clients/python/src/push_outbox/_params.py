"""Param building for the typed methods (shared by the sync and asyncio clients)."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from ._protocol import MISSING


def format_time(value: Union[str, _dt.datetime]) -> str:
    """ISO 8601 string for the ``time`` param. Aware datetimes become UTC ``...sssZ``."""
    if isinstance(value, str):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("time must be timezone-aware (or an ISO 8601 string)")
        utc = value.astimezone(_dt.timezone.utc)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    raise TypeError(f"time must be a str or datetime, not {type(value).__name__}")


def _put(params: Dict[str, Any], key: str, value: Any) -> None:
    if value is not None and value is not MISSING:
        params[key] = value


def params_parse_payload(payload: Any, require: Any, categories: Any) -> Dict[str, Any]:
    params: Dict[str, Any] = {"payload": payload}
    _put(params, "require", require)
    _put(params, "categories", list(categories) if categories is not None else None)
    return params


def params_save_custom_event(
    name: str, properties: Any, time: Any, user: Any, id: Any
) -> Dict[str, Any]:
    params: Dict[str, Any] = {"name": name}
    _put(params, "properties", properties)
    _put(params, "time", format_time(time) if time is not None else None)
    _put(params, "user", user)
    _put(params, "id", id)
    return params


def params_save_custom_attribute(
    key: str, value: Any, op: Any, user: Any, id: Any
) -> Dict[str, Any]:
    params: Dict[str, Any] = {"key": key}
    if value is not MISSING:
        params["value"] = value  # None is sent as JSON null
    _put(params, "op", op)
    _put(params, "user", user)
    _put(params, "id", id)
    return params


def params_save_user_attribute(field: str, value: Any, user: Any, id: Any) -> Dict[str, Any]:
    params: Dict[str, Any] = {"field": field, "value": value}
    _put(params, "user", user)
    _put(params, "id", id)
    return params


def params_flush_pending(max: Any, format: Any, lease_ms: Any, default_user: Any) -> Dict[str, Any]:
    params: Dict[str, Any] = {}
    _put(params, "max", max)
    _put(params, "format", format)
    _put(params, "leaseMs", lease_ms)
    _put(params, "defaultUser", default_user)
    return params


#: The App Group keys ``importLegacy`` reads; every other key of a ``defaults`` mapping is ignored.
LEGACY_LISTS = ("pending_custom_events", "pending_custom_attributes", "pending_user_attributes")


def params_import_legacy(
    defaults: Optional[Mapping[str, Any]],
    lists: Mapping[str, Optional[Sequence[Any]]],
    user: Any,
) -> Dict[str, Any]:
    """The three lists from ``defaults`` (a ``plutil -convert json`` object), overridden by ``lists``."""
    params: Dict[str, Any] = {}
    for key in LEGACY_LISTS:
        value = lists.get(key)
        if value is None and defaults is not None:
            value = defaults.get(key)
        _put(params, key, value if value is None or isinstance(value, (dict, str)) else list(value))
    _put(params, "user", user)
    return params
