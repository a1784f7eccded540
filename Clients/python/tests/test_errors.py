"""Error mapping against the real binary."""

from __future__ import annotations

from typing import Callable

import pytest
from conftest import run
from push_outbox import (
    AsyncOutbox,
    InvalidParams,
    ItemTooLarge,
    LeaseNotFound,
    MethodNotFound,
    Outbox,
    RpcError,
    StoreFull,
)

pytestmark = pytest.mark.timeout(60)


def pairs(err: InvalidParams) -> set:
    return {(e.get("path"), e.get("code")) for e in err.errors}


def test_invalid_params_lists_every_problem(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    with pytest.raises(InvalidParams) as info:
        ob.call("saveCustomEvent", {"name": 5, "bogus": 1})
    err = info.value
    assert err.code == -32602 and err.method == "saveCustomEvent"
    assert isinstance(err.data, dict) and isinstance(err.data["errors"], list)
    for e in err.errors:
        assert {"path", "code", "message"} <= set(e)
    assert {("name", "wrong_type"), ("bogus", "unknown_param")} <= pairs(err)


def test_invalid_params_missing_and_empty_name(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    with pytest.raises(InvalidParams) as info:
        ob.call("saveCustomEvent", {})
    assert ("name", "missing") in pairs(info.value)
    with pytest.raises(InvalidParams) as info:
        ob.save_custom_event("")
    assert ("name", "name_empty") in pairs(info.value)
    assert ob.status()["pending"]["total"] == 0


def test_invalid_params_property_path(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    with pytest.raises(InvalidParams) as info:
        ob.save_custom_event("e", properties={"time": "2025-01-01T00:00:00Z", "ok": 1})
    assert ("properties.time", "reserved_property_key") in pairs(info.value)
    with pytest.raises(InvalidParams) as info:
        ob.save_custom_event("e", properties={"foo": "x" * 300})
    assert ("properties.foo", "string_too_long") in pairs(info.value)


def test_positional_params_are_invalid_params(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    with pytest.raises(InvalidParams):
        ob.call("saveCustomEvent", ["push_opened"])


def test_parse_payload_require_errors(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    with pytest.raises(InvalidParams) as info:
        ob.parse_payload(
            {"label": "x", "count": "abc"}, require={"missing_key": "string", "count": "integer"}
        )
    by_key = {e.get("key"): e for e in info.value.errors}
    assert set(by_key) == {"missing_key", "count"}
    m = by_key["missing_key"]
    assert (m["path"], m["code"]) == ("payload.missing_key", "missing")
    c = by_key["count"]
    assert c["path"] == "payload.count"
    assert c["code"] in ("wrong_type", "invalid")
    assert (c["expected"], c["got"]) == ("integer", "string")
    assert all(isinstance(e["message"], str) for e in info.value.errors)


def test_method_not_found_via_call(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    for name in ("noSuchMethod", "SaveCustomEvent", "rpc.nope", ""):
        with pytest.raises(MethodNotFound) as info:
            ob.call(name, {})
        assert info.value.code == -32601 and info.value.method == name
        assert isinstance(info.value.message, str)
    # the connection is still fine afterwards
    assert ob.status()["pending"]["total"] == 0


def test_lease_not_found(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    with pytest.raises(LeaseNotFound) as info:
        ob.ack_flush("00000000-0000-7000-8000-000000000000")
    assert info.value.code == -32004
    assert info.value.data is None or isinstance(info.value.data, dict)
    with pytest.raises(LeaseNotFound):
        ob.release_flush("no-such-flush")


def test_expired_lease_is_not_found(spawn: Callable[..., Outbox]) -> None:
    import time

    ob = spawn()
    ob.save_custom_event("e")
    lease = ob.flush_pending(lease_ms=1)
    time.sleep(0.05)
    with pytest.raises(LeaseNotFound):
        ob.ack_flush(lease["flushId"])
    # the items are pending again
    assert ob.status()["pending"]["total"] == 1


def test_store_full(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(args=["--max-pending", "2"])
    ob.save_custom_event("a")
    ob.save_custom_event("b")
    with pytest.raises(StoreFull) as info:
        ob.save_custom_event("c")
    assert info.value.code == -32001
    assert ob.status()["pending"]["total"] == 2


def test_item_too_large(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(args=["--max-item-bytes", "300"])
    props = {f"k{i}": "v" * 50 for i in range(20)}
    with pytest.raises(ItemTooLarge) as info:
        ob.save_custom_event("big", properties=props)
    assert info.value.code == -32002
    assert ob.status()["pending"]["total"] == 0


def test_errors_async(aspawn: Callable[..., AsyncOutbox]) -> None:
    async def main() -> None:
        async with aspawn() as ob:
            with pytest.raises(InvalidParams) as info:
                await ob.call("saveCustomEvent", {"name": 5, "bogus": 1})
            assert {("name", "wrong_type"), ("bogus", "unknown_param")} <= pairs(info.value)
            with pytest.raises(MethodNotFound):
                await ob.call("noSuchMethod")
            with pytest.raises(LeaseNotFound):
                await ob.ack_flush("nope")
            with pytest.raises(RpcError):
                await ob.release_flush("nope")
            assert (await ob.status())["pending"]["total"] == 0

    run(main())
