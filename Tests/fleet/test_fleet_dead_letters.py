"""listDeadLetters / requeueDeadLetters / dropDeadLetters with `fleet: true` against `<stream>_DEAD`,
over a serving process with a NATS address, compared with what nats-py reads from the streams."""

from __future__ import annotations

from pathlib import Path

from conftest import (
    BrazeStub,
    NatsServer,
    deliver_once,
    relay,
    save_items,
    stream_key,
)
from serving import Serving
from test_deliver_from import poison


def test_fleet_dead_letters_agree_with_the_dead_stream(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    saved = save_items(tmp_path / "store", 400, 5)
    bad = sorted(
        i
        for i, item in saved.items.items()
        if item["kind"] == "customEvent" and item["body"]["properties"]["s"] == "é✓é✓é✓"
    )
    assert len(bad) >= 4
    assert relay(tmp_path / "store", nats_server).returncode == 0
    stub.responder = poison
    assert deliver_once(nats_server, stub).returncode == 0  # the bad ones go to PUSH_OUTBOX_DEAD
    assert nats_server.messages() == []

    serving = Serving(tmp_path, tmp_path / "mine", "--relay", nats_server.url)
    try:
        listed = serving.call("listDeadLetters", {"fleet": True})["result"]
        dead = {p["id"]: (seq, p) for seq, _, _, p in nats_server.messages("PUSH_OUTBOX_DEAD")}
        assert listed["total"] == len(dead) == len(bad)
        assert sorted(d["item"]["id"] for d in listed["deadLetters"]) == bad
        for entry in listed["deadLetters"]:
            seq, payload = dead[entry["item"]["id"]]
            assert (
                entry["seq"] == seq and entry["reason"] == payload["deadReason"] == "Invalid event"
            )
            assert stream_key(entry["item"]) == saved.key(entry["item"]["id"])
        two = serving.call("listDeadLetters", {"fleet": True, "max": 2})["result"]
        assert len(two["deadLetters"]) == 2 and two["total"] == len(bad)

        dropped = serving.call("dropDeadLetters", {"fleet": True, "ids": [bad[0], "nope"]})
        assert dropped["result"] == {"dropped": 1}
        left = {p["id"] for _, _, _, p in nats_server.messages("PUSH_OUTBOX_DEAD")}
        assert left == set(bad[1:])

        # Requeued at once: inside the 120 s duplicate window of the ids' first publish.
        requeued = serving.call("requeueDeadLetters", {"fleet": True, "ids": bad[1:3]})
        assert requeued["result"] == {"requeued": 2}
        main = nats_server.messages()
        assert sorted(p["id"] for _, _, _, p in main) == bad[1:3]
        assert all("deadReason" not in p for _, _, _, p in main)
        assert all(stream_key(p) == saved.key(p["id"]) for _, _, _, p in main)
        assert all(h["Nats-Msg-Id"] != p["id"] for _, _, h, p in main)
        left = {p["id"] for _, _, _, p in nats_server.messages("PUSH_OUTBOX_DEAD")}
        assert left == set(bad[3:])
        everything = serving.call("requeueDeadLetters", {"fleet": True})["result"]
        assert everything == {"requeued": len(bad) - 3}
        assert nats_server.messages("PUSH_OUTBOX_DEAD") == []
        assert sorted(p["id"] for _, _, _, p in nats_server.messages()) == bad[1:]
        assert serving.call("listDeadLetters", {"fleet": True})["result"] == {
            "deadLetters": [],
            "total": 0,
        }
        wrong = serving.call("listDeadLetters", {"fleet": "yes"})["error"]
        assert wrong["code"] == -32602
        assert wrong["data"]["errors"][0]["path"] == "fleet"
        assert wrong["data"]["errors"][0]["code"] == "wrong_type"
    finally:
        assert serving.close() == 0, serving.stderr()


def test_fleet_true_without_a_nats_address_is_a_precise_error(tmp_path: Path) -> None:
    serving = Serving(tmp_path, tmp_path / "store")
    try:
        for method, params in [
            ("listDeadLetters", {"fleet": True}),
            ("requeueDeadLetters", {"fleet": True}),
            ("dropDeadLetters", {"fleet": True, "ids": ["x"]}),
        ]:
            error = serving.call(method, params)["error"]
            assert error["code"] == -32602, error
            assert error["data"]["errors"][0]["path"] == "fleet"
            assert error["data"]["errors"][0]["code"] == "no_fleet"
        local = serving.call("listDeadLetters", {"fleet": False})["result"]
        assert local == {"deadLetters": [], "total": 0}
    finally:
        assert serving.close() == 0


def test_a_nats_failure_is_reported_in_error_data(tmp_path: Path) -> None:
    server = NatsServer(tmp_path)  # never started
    serving = Serving(tmp_path, tmp_path / "store", "--relay", server.url)
    try:
        error = serving.call("listDeadLetters", {"fleet": True})["error"]
        assert error["code"] == -32603 and error["data"]["reason"] == "nats_failed"
        assert "cannot connect" in error["data"]["detail"]
        assert error["data"]["stream"] == "PUSH_OUTBOX_DEAD"
        assert "result" in serving.call("status")  # the loop kept serving
    finally:
        assert serving.close() == 0
