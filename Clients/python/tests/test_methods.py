"""Every wire method through the sync and the asyncio client, against the real binary."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any, Callable, Dict

import pytest
from conftest import OPENRPC_PATH, run
from push_outbox import AsyncOutbox, DeliveryNotConfigured, InvalidParams, Outbox

pytestmark = pytest.mark.timeout(60)

ISO_MS_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

PROPS = {"step": 1, "flag": True, "off": False, "ratio": 1.5, "label": "x\u2028y", "zero": 0}

BRAZE_PAYLOAD: Dict[str, Any] = {
    "aps": {
        "alert": {"title": "Hello", "subtitle": "Sub", "body": "World"},
        "badge": 3,
        "sound": "default",
        "category": "lab_register",
        "thread-id": "thread-1",
        "mutable-content": 1,
    },
    "ab": {"att": {"url": "https://cdn.example.com/a.jpg", "type": "jpg"}, "c": "campaign"},
    "ab_uri": "https://example.com/deep",
    "braze_id": "braze-123",
    "cert_title": "Swift",
    "completed_session_count": 3,
}

SAVE_KEYS = {"id", "seq", "pending"}
ITEM_BASE_KEYS = {"id", "seq", "kind", "savedAt", "deliveryCount"}


def assert_type_exact(actual: Any, expected: Any) -> None:
    """Deep equality that also tells 1 from True from 1.0."""
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, dict):
        assert set(actual) == set(expected)
        for k in expected:
            assert_type_exact(actual[k], expected[k])
    elif isinstance(expected, list):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_type_exact(a, e)
    else:
        assert actual == expected


def check_save_result(r: Dict[str, Any], pending: int) -> None:
    assert SAVE_KEYS <= set(r) <= SAVE_KEYS | {"duplicate", "warnings"}
    assert isinstance(r["id"], str) and r["id"]
    assert type(r["seq"]) is int and r["seq"] >= 1
    assert r["pending"] == pending


def check_status(s: Dict[str, Any]) -> None:
    assert set(s) == {
        "health",
        "problems",
        "version",
        "store",
        "pending",
        "bytes",
        "lastSnapshotAt",
        "snapshotSeq",
        "journalBytes",
        "storeBytes",
        "maxStoreBytes",
        "fsync",
        "lease",
        "recovery",
        "deadLetters",
        "delivery",
        "relay",
    }
    assert isinstance(s["version"], str)
    assert isinstance(s["deadLetters"], int)
    assert set(s["pending"]) == {"total", "customEvent", "customAttribute", "userAttribute"}
    assert (
        s["pending"]["total"]
        == s["pending"]["customEvent"]
        + s["pending"]["customAttribute"]
        + s["pending"]["userAttribute"]
    )
    assert isinstance(s["recovery"], list)
    assert s["fsync"] in ("always", "everysec", "never")


# --- sync ----------------------------------------------------------------------------------------


def test_status_memory(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    s = ob.status()
    check_status(s)
    assert s["store"] is None
    assert s["pending"] == {"total": 0, "customEvent": 0, "customAttribute": 0, "userAttribute": 0}
    assert s["lease"] is None


def test_save_custom_event_then_drain(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    r = ob.save_custom_event("push_opened", properties=PROPS, user={"externalId": "u1"})
    check_save_result(r, pending=1)
    flushed = ob.flush_pending()
    assert set(flushed) == {"flushId", "items", "remaining"}
    assert isinstance(flushed["flushId"], str)
    assert flushed["remaining"] == 0
    [item] = flushed["items"]
    assert item["id"] == r["id"] and item["seq"] == r["seq"]
    assert item["kind"] == "customEvent"
    assert item["name"] == "push_opened"
    assert_type_exact(item["properties"], PROPS)
    assert item["user"] == {"externalId": "u1"}
    assert item["deliveryCount"] == 0
    assert ISO_MS_UTC.match(item["savedAt"]), item["savedAt"]
    assert isinstance(item["time"], str)
    assert "superseded" not in item or item["superseded"] is True
    assert ob.status()["pending"]["total"] == 0
    assert ob.flush_pending()["items"] == []


def test_event_without_properties_has_empty_object(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    ob.save_custom_event("bare")
    [item] = ob.flush_pending()["items"]
    assert item["properties"] == {}
    assert "user" not in item


def test_event_time_is_kept(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    when = dt.datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)
    ob.save_custom_event("timed", time=when)
    [item] = ob.flush_pending()["items"]
    assert item["time"] == "2025-01-02T03:04:05.678Z"


def test_client_supplied_id_and_duplicate(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    first = ob.save_custom_event("once", id="evt-1")
    check_save_result(first, pending=1)
    assert first["id"] == "evt-1"
    assert "duplicate" not in first
    again = ob.save_custom_event("once", id="evt-1")
    assert again["id"] == "evt-1"
    assert again.get("duplicate") is True
    assert again["pending"] == 1
    assert [i["id"] for i in ob.flush_pending()["items"]] == ["evt-1"]


def test_save_custom_attribute(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    check_save_result(ob.save_custom_attribute("level", 3, user={"brazeId": "b1"}), pending=1)
    check_save_result(
        ob.save_custom_attribute("visits", 1, op="inc", user={"brazeId": "b1"}), pending=2
    )
    s = ob.status()
    assert s["pending"]["customAttribute"] == 2 and s["pending"]["total"] == 2
    items = ob.flush_pending()["items"]
    assert [i["kind"] for i in items] == ["customAttribute", "customAttribute"]
    first, second = items
    assert (first["key"], first["op"], first["value"]) == ("level", "set", 3)
    assert type(first["value"]) is int
    assert (second["key"], second["op"], second["value"]) == ("visits", "inc", 1)
    assert first["user"] == {"brazeId": "b1"}


def test_save_user_attribute(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    check_save_result(
        ob.save_user_attribute(
            "email", "a@example.com", user={"alias": {"name": "n", "label": "l"}}
        ),
        pending=1,
    )
    check_save_result(
        ob.save_user_attribute("first_name", None, user={"email": "a@example.com"}), pending=2
    )
    assert ob.status()["pending"]["userAttribute"] == 2
    first, second = ob.flush_pending()["items"]
    assert (first["kind"], first["field"], first["value"]) == (
        "userAttribute",
        "email",
        "a@example.com",
    )
    assert first["user"] == {"alias": {"name": "n", "label": "l"}}
    assert (second["field"], second["value"]) == ("first_name", None)
    assert second["user"] == {"email": "a@example.com"}


def test_flush_max_and_order(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    ids = [ob.save_custom_event(f"e{i}")["id"] for i in range(5)]
    a = ob.flush_pending(max=2)
    assert [i["id"] for i in a["items"]] == ids[:2] and a["remaining"] == 3
    b = ob.flush_pending(max=10)
    assert [i["id"] for i in b["items"]] == ids[2:] and b["remaining"] == 0
    seqs = [i["seq"] for i in a["items"] + b["items"]]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5


def test_lease_then_ack(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    ids = [ob.save_custom_event(f"e{i}", user={"externalId": "u"})["id"] for i in range(3)]
    lease = ob.flush_pending(max=2, lease_ms=60_000)
    assert set(lease) == {"flushId", "leaseExpiresAt", "items", "remaining"}
    assert ISO_MS_UTC.match(lease["leaseExpiresAt"])
    assert [i["id"] for i in lease["items"]] == ids[:2]
    assert lease["remaining"] == 1
    # repeating while the lease is live gives the same flush
    again = ob.flush_pending(max=2, lease_ms=60_000)
    assert again["flushId"] == lease["flushId"]
    assert again["items"] == lease["items"]
    s = ob.status()
    assert s["lease"] is not None
    assert s["lease"]["flushId"] == lease["flushId"] and s["lease"]["count"] == 2
    assert ISO_MS_UTC.match(s["lease"]["expiresAt"])
    assert ob.ack_flush(lease["flushId"]) == {"acked": 2}
    assert ob.ack_flush(lease["flushId"]) == {"acked": 0}
    s = ob.status()
    assert s["pending"]["total"] == 1 and s["lease"] is None
    [left] = ob.flush_pending()["items"]
    assert left["id"] == ids[2]


def test_lease_then_release_redelivers(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    saved = ob.save_custom_event("e")
    lease = ob.flush_pending(lease_ms=60_000)
    assert [i["deliveryCount"] for i in lease["items"]] == [0]
    assert ob.release_flush(lease["flushId"]) == {"released": 1}
    assert ob.status()["lease"] is None
    drained = ob.flush_pending()
    assert drained["flushId"] != lease["flushId"]
    [item] = drained["items"]
    assert item["id"] == saved["id"]
    assert item["deliveryCount"] == 1


def test_flush_users_track_format(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    ob.save_custom_event("push_opened", properties={"step": 1}, user={"externalId": "u1"})
    ob.save_custom_attribute("level", 3, user={"externalId": "u1"})
    anon = ob.save_custom_event("anonymous")
    out = ob.flush_pending(format="usersTrack")
    assert {"flushId", "requests", "skipped", "remaining"} <= set(out)
    assert "items" not in out
    assert out["skipped"] == [{"id": anon["id"], "reason": "no_identifier"}]
    # An item no identifier can fill becomes a dead letter, so a drain loop ends.
    dead = ob.list_dead_letters()
    assert dead["total"] == 1 and dead["deadLetters"][0]["reason"] == "no_identifier"
    assert dead["deadLetters"][0]["item"]["id"] == anon["id"]
    events = [e for req in out["requests"] for e in req["events"]]
    attributes = [a for req in out["requests"] for a in req["attributes"]]
    assert all(set(req) == {"attributes", "events"} for req in out["requests"])
    assert [e["name"] for e in events] == ["push_opened"]
    assert events[0]["external_id"] == "u1"
    assert events[0]["properties"] == {"step": 1}
    assert (
        len(attributes) == 1
        and attributes[0]["external_id"] == "u1"
        and attributes[0]["level"] == 3
    )


def test_flush_users_track_default_user(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    ob.save_custom_event("anonymous")
    out = ob.flush_pending(format="usersTrack", default_user={"externalId": "fallback"})
    assert out["skipped"] == []
    events = [e for req in out["requests"] for e in req["events"]]
    assert [(e["name"], e["external_id"]) for e in events] == [("anonymous", "fallback")]


def test_parse_payload_braze(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    r = ob.parse_payload(BRAZE_PAYLOAD)
    assert set(r) == {
        "braze",
        "silent",
        "internal",
        "pushStory",
        "category",
        "threadId",
        "mutableContent",
        "alert",
        "badge",
        "sound",
        "deepLink",
        "attachment",
        "brazeId",
        "extras",
        "values",
        "warnings",
        "diagnostics",
    }
    assert (
        r["braze"] is True
        and r["silent"] is False
        and r["internal"] is False
        and r["pushStory"] is False
    )
    assert r["category"] == "lab_register"
    assert r["threadId"] == "thread-1"
    assert r["mutableContent"] is True
    assert r["alert"] == {"title": "Hello", "subtitle": "Sub", "body": "World"}
    assert r["badge"] == 3 and r["sound"] == "default"
    assert r["deepLink"] == "https://example.com/deep"
    assert r["attachment"] == {"url": "https://cdn.example.com/a.jpg", "type": "jpg"}
    assert r["brazeId"] == "braze-123"
    assert_type_exact(r["extras"], {"cert_title": "Swift", "completed_session_count": 3})
    assert r["values"] == {}
    assert isinstance(r["warnings"], list)


def test_parse_payload_plain_and_string_forms(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    plain = {"aps": {"content-available": 1}, "k": [1, "two", None]}
    r = ob.parse_payload(plain)
    assert r["braze"] is False
    assert r["alert"] is None and r["attachment"] is None and r["brazeId"] is None
    assert r["category"] is None and r["badge"] is None
    assert r["extras"] == {"k": [1, "two", None]}
    # a string holding a JSON object is the same payload
    assert ob.parse_payload(json.dumps(plain)) == r
    assert ob.parse_payload(json.dumps(BRAZE_PAYLOAD)) == ob.parse_payload(BRAZE_PAYLOAD)


def test_parse_payload_silent_braze(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    r = ob.parse_payload({"aps": {"content-available": 1}, "ab": {"c": "x"}})
    assert r["braze"] is True and r["silent"] is True


def test_parse_payload_require_gives_typed_values(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    r = ob.parse_payload(
        BRAZE_PAYLOAD, require={"cert_title": "string", "completed_session_count": "integer"}
    )
    assert_type_exact(r["values"], {"cert_title": "Swift", "completed_session_count": 3})


def test_parse_payload_categories_filter_accepts_listed(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    r = ob.parse_payload(BRAZE_PAYLOAD, categories=["lab_register", "match_game"])
    assert r["category"] == "lab_register"


def test_discover_returns_openrpc_document(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    doc = ob.discover()
    assert OPENRPC_PATH.exists(), f"{OPENRPC_PATH} does not exist yet"
    with OPENRPC_PATH.open("rb") as f:
        assert doc == json.load(f)


def test_generic_call_and_notify(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    check_status(ob.call("status"))  # params omitted
    check_status(ob.call("status", {}))
    # notifications are executed but never answered
    ob.notify("saveCustomEvent", {"name": "via_notification"})
    ob.notify("noSuchMethod", {"x": 1})
    ob.notify("saveCustomEvent", {"bad": "params"})
    assert ob.status()["pending"]["total"] == 1
    [item] = ob.flush_pending()["items"]
    assert item["name"] == "via_notification"


def test_store_persists_across_restart(spawn: Callable[..., Outbox], tmp_path: Any) -> None:
    store = tmp_path / "store"
    ob = spawn(store=store)
    saved = ob.save_custom_event("durable", properties={"n": 1}, user={"externalId": "u"})
    s = ob.status()
    assert s["store"] is not None
    assert ob.close() == 0
    ob2 = spawn(store=store)
    assert ob2.status()["pending"]["total"] == 1
    [item] = ob2.flush_pending()["items"]
    assert (item["id"], item["name"], item["properties"]) == (saved["id"], "durable", {"n": 1})
    assert ob2.close() == 0


# What `plutil -convert json` gives for an App Group written by Braze's push guide, plus a key the
# import ignores.
APP_GROUP: Dict[str, Any] = {
    "NSLanguages": ["en"],
    "pending_custom_events": [{"event_name": "push_game_won", "score": 12}, {"score": 3}],
    "pending_custom_attributes": [{"favorite_drink": "latte"}],
    "pending_user_attributes": [{"email": "ann@example.com"}],
}


def test_import_legacy_saves_the_valid_and_reports_the_rest(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    out = ob.import_legacy(APP_GROUP, user={"externalId": "u1"})
    assert (out["saved"], out["failed"], out["pending"]) == (3, 1, 3)
    assert [(r["list"], r["index"]) for r in out["results"]] == [
        ("pending_custom_events", 0),
        ("pending_custom_events", 1),
        ("pending_custom_attributes", 0),
        ("pending_user_attributes", 0),
    ]
    rejected = out["results"][1]
    assert "ids" not in rejected and rejected["error"]["code"] == -32602
    assert [e["code"] for e in rejected["error"]["data"]["errors"]] == ["missing"]
    items = ob.flush_pending()["items"]
    assert [i["id"] for i in items] == [r["ids"][0] for r in out["results"] if "ids" in r]
    assert items[0]["properties"] == {"score": 12} and items[0]["user"] == {"externalId": "u1"}
    # A keyword list replaces the one in `defaults`; the element gets the save method's own error.
    out = ob.import_legacy(
        APP_GROUP, pending_custom_events=[], pending_user_attributes=[{"email": "x"}]
    )
    assert [r["list"] for r in out["results"]] == [
        "pending_custom_attributes",
        "pending_user_attributes",
    ]
    with pytest.raises(InvalidParams) as direct:
        ob.save_user_attribute("email", "x")
    assert direct.value.codes == ["invalid_email"]
    assert out["results"][1]["error"]["data"] == direct.value.data


def test_import_legacy_refuses_the_call_as_a_whole(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(args=["--max-batch", "2"])
    with pytest.raises(InvalidParams) as too_many:
        ob.import_legacy(APP_GROUP)
    assert too_many.value.codes == ["too_many_elements"]
    with pytest.raises(InvalidParams) as not_array:
        ob.import_legacy({"pending_custom_events": {"event_name": "x"}})
    assert not_array.value.codes == ["wrong_type"]
    assert ob.import_legacy({}) == {"results": [], "saved": 0, "failed": 0, "pending": 0}
    assert ob.status()["pending"]["total"] == 0


# --- asyncio --------------------------------------------------------------------------------------


def test_every_method_async(aspawn: Callable[..., AsyncOutbox]) -> None:
    async def main() -> None:
        async with aspawn() as ob:
            check_status(await ob.status())
            check_status(await ob.call("status"))
            r = await ob.save_custom_event(
                "push_opened", properties=PROPS, user={"externalId": "u1"}
            )
            check_save_result(r, pending=1)
            check_save_result(
                await ob.save_custom_attribute("level", 3, user={"externalId": "u1"}), pending=2
            )
            check_save_result(
                await ob.save_user_attribute("email", "a@example.com", user={"externalId": "u1"}),
                pending=3,
            )
            await ob.notify("saveCustomEvent", {"name": "note"})
            lease = await ob.flush_pending(lease_ms=60_000, max=2)
            assert len(lease["items"]) == 2 and lease["remaining"] == 2
            assert_type_exact(lease["items"][0]["properties"], PROPS)
            assert await ob.release_flush(lease["flushId"]) == {"released": 2}
            lease = await ob.flush_pending(lease_ms=60_000)
            assert [i["kind"] for i in lease["items"]] == [
                "customEvent",
                "customAttribute",
                "userAttribute",
                "customEvent",
            ]
            assert await ob.ack_flush(lease["flushId"]) == {"acked": 4}
            track = await ob.flush_pending(format="usersTrack")
            assert track["requests"] == [] or all(
                not r["events"] and not r["attributes"] for r in track["requests"]
            )
            p = await ob.parse_payload(
                BRAZE_PAYLOAD, require={"completed_session_count": "integer"}
            )
            assert p["braze"] is True and p["values"] == {"completed_session_count": 3}
            doc = await ob.discover()
            assert isinstance(doc, dict) and "methods" in doc
            assert (await ob.status())["pending"]["total"] == 0
            await ob.save_custom_event("anonymous")
            await ob.flush_pending(format="usersTrack")  # no identifier: a dead letter
            dead = await ob.list_dead_letters(max=10)
            assert dead["total"] == 1 and dead["deadLetters"][0]["reason"] == "no_identifier"
            dead_id = dead["deadLetters"][0]["item"]["id"]
            assert await ob.requeue_dead_letters([dead_id]) == {"requeued": 1}
            assert (await ob.status())["pending"]["total"] == 1
            await ob.flush_pending(format="usersTrack")  # dead-letters it again
            assert await ob.drop_dead_letters([dead_id]) == {"dropped": 1}
            assert (await ob.list_dead_letters())["total"] == 0
            with pytest.raises(DeliveryNotConfigured):
                await ob.deliver_pending()
            imported = await ob.import_legacy(APP_GROUP)
            assert (imported["saved"], imported["failed"]) == (3, 1)
            assert imported["results"][1]["error"]["code"] == -32602
        assert ob.returncode == 0

    run(main())
