"""push-outbox deliver --from against a real nats-server -js and the delivery suite's Braze stub:
what producers relayed reaches the stub once, Braze's answers settle the stream, one elected leader
sends, and a standby takes over after the leader is killed."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import (
    BrazeStub,
    NatsServer,
    Reply,
    binary,
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


def poison(body: Any) -> Reply:
    """Braze refuses a whole request that holds an event with properties.s == "é✓é✓é✓"."""
    events = (body or {}).get("events", [])
    for index, event in enumerate(events):
        if event.get("properties", {}).get("s") == "é✓é✓é✓":
            return Reply(
                400,
                {
                    "message": "Invalid event",
                    "errors": [{"type": "bad_event", "input_array": "events", "index": index}],
                },
            )
    return Reply()


def test_a_refused_object_lands_in_the_dead_stream_with_its_reason(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    saved = save_items(tmp_path / "store", 400, 5)
    bad = [
        i
        for i, item in saved.items.items()
        if item["kind"] == "customEvent" and item["body"]["properties"]["s"] == "é✓é✓é✓"
    ]
    assert bad
    assert relay(tmp_path / "store", nats_server).returncode == 0
    stub.responder = poison
    run = deliver_once(nats_server, stub)
    assert run.returncode == 0, run.stderr
    dead = nats_server.messages("PUSH_OUTBOX_DEAD")
    assert sorted(p["id"] for _, _, _, p in dead) == sorted(bad)
    assert all(p["deadReason"] == "Invalid event" for _, _, _, p in dead)
    assert all(h["Nats-Msg-Id"] == p["id"] for _, _, h, p in dead)
    good = [e for e in saved_events(saved) if json.loads(e[2]).get("s") != "é✓é✓é✓"]
    assert Counter(received_events(stub.accepted_objects())) == Counter(good)
    assert stream_count(nats_server, "PUSH_OUTBOX") == 0
    assert f"dead-lettered {len(bad)}" in run.stderr


def test_401_exits_1_with_the_reason_and_keeps_every_message(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    saved = save_items(tmp_path / "store", 300, 6)
    assert relay(tmp_path / "store", nats_server).returncode == 0
    stub.responder = lambda body: Reply(401, {"message": "Invalid API key"})
    run = deliver_once(nats_server, stub, "--follow")
    assert run.returncode == 1, run.stderr
    assert "HTTP 401: Invalid API key" in run.stderr
    assert len(stub.requests) >= 1
    assert stream_count(nats_server, "PUSH_OUTBOX") == len(saved.items)
    assert stream_count(nats_server, "PUSH_OUTBOX_DEAD") == 0


def test_429_gives_the_messages_back_with_retry_after_and_they_arrive(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    saved = save_items(tmp_path / "store", 300, 8)
    assert relay(tmp_path / "store", nats_server).returncode == 0
    stub.queue(Reply(429, {"message": "slow down"}, headers={"Retry-After": "1"}))
    run = deliver_once(nats_server, stub, "--braze-max-in-flight", "1")
    assert run.returncode == 0, run.stderr
    assert stub.requests[0].status == 429
    refused = stub.requests[0]
    assert refused.done is not None
    later = [r.at for r in stub.requests if r.at > refused.done]
    assert later and min(later) - refused.done >= 0.9  # nothing is sent before Retry-After passes
    assert Counter(received_events(stub.accepted_objects())) == Counter(saved_events(saved))
    assert stream_count(nats_server, "PUSH_OUTBOX") == 0


def test_fleet_flags_need_from(tmp_path: Path, stub: BrazeStub) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    env["BRAZE_API_KEY"] = "k"
    run = subprocess.run(
        [binary(), "deliver", "--follow", "--braze-endpoint", stub.url, "--memory"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 2
    assert "need --from" in run.stderr


def test_a_wrong_token_exits_1_and_is_never_printed(tmp_path: Path, stub: BrazeStub) -> None:
    server = NatsServer(tmp_path, token="right-token-9f8e")
    server.start()
    try:
        env_token = "wrong-token-4d3c2b"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        env.update(BRAZE_API_KEY="k", PUSH_OUTBOX_NATS_TOKEN=env_token)
        run = subprocess.run(
            [binary(), "deliver", "--from", server.url, "--braze-endpoint", stub.url, "--memory"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert run.returncode == 1, run.stderr
        assert "Authorization" in run.stderr or "authorization" in run.stderr
        assert env_token not in run.stderr
    finally:
        server.stop()


def test_each_users_events_arrive_in_save_order_through_retries(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    saved = save_items(tmp_path / "store", 1500, 13)
    assert relay(tmp_path / "store", nats_server).returncode == 0
    count = [0]

    def flaky(body: Any) -> Reply:
        count[0] += 1
        if count[0] % 3 == 0:
            return Reply(503, {"message": "busy"}, headers={"Retry-After": "0.2"})
        return Reply()

    stub.responder = flaky
    run = deliver_once(nats_server, stub, "--braze-backoff-ms", "50", "--track-batch-limit", "20")
    assert run.returncode == 0, run.stderr
    accepted = stub.accepted_objects()
    assert Counter(received_events(accepted)) == Counter(saved_events(saved))
    order: dict = {}
    for obj in accepted:
        if "name" in obj:
            order.setdefault(obj["external_id"], []).append(obj["properties"]["n"])
    assert all(ns == sorted(ns) for ns in order.values()), order
    assert sum(1 for r in stub.requests if r.status == 503) >= 3


def test_nats_max_bytes_limits_the_streams_deliver_from_creates(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    run = deliver_once(nats_server, stub, "--nats-max-bytes", "65536")
    assert run.returncode == 0, run.stderr
    assert nats_server.stream_config("PUSH_OUTBOX")["max_bytes"] == 65536
    assert nats_server.stream_config("PUSH_OUTBOX_DEAD")["max_bytes"] == 65536
