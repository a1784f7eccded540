"""push-outbox deliver --from against a real nats-server -js and the delivery suite's Braze stub:
what producers relayed reaches the stub once, Braze's answers settle the stream, one elected leader
sends, and a standby takes over after the leader is killed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from conftest import (
    BrazeStub,
    NatsServer,
    Reply,
    deliver_once,
    received_events,
    relay,
    save_items,
    saved_events,
    stream_count,
)


def test_one_shot_delivers_the_stream_and_exits_0(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    saved = save_items(tmp_path / "store", 600, 11)
    assert relay(tmp_path / "store", nats_server).returncode == 0
    run = deliver_once(nats_server, stub)
    assert run.returncode == 0, run.stderr
    assert Counter(received_events(stub.accepted_objects())) == Counter(saved_events(saved))
    assert stream_count(nats_server, "PUSH_OUTBOX") == 0
    assert all(len(r.body["attributes"]) + len(r.body["events"]) <= 75 for r in stub.requests)
    # One user's objects arrive in save order (the events carry n).
    order: dict = {}
    for obj in stub.objects():
        if "name" in obj:
            order.setdefault(obj["external_id"], []).append(obj["properties"]["n"])
    assert all(ns == sorted(ns) for ns in order.values())
    assert "role leader" in run.stderr
