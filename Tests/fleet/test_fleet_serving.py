"""Serving processes as a fleet: `--relay` producers and `--deliver --from` deliverers, over the real
binary, a real nats-server -js and the delivery suite's Braze stub. `status.delivery.fleet` says
who leads; it moves to the standby when the leader is killed with -9."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any, Dict

from conftest import (
    API_KEY,
    BrazeStub,
    NatsServer,
    Saved,
    leader_value,
    received_events,
    saved_events,
    stream_count,
    wait_for,
)
from serving import Serving


def deliverer(tmp: Path, name: str, server: NatsServer, stub: BrazeStub) -> Serving:
    return Serving(
        tmp,
        tmp / name,
        "--deliver",
        "--from",
        server.url,
        "--braze-endpoint",
        stub.url,
        "--leader-lease",
        "1",
        "--braze-timeout-ms",
        "2000",
        env={"BRAZE_API_KEY": API_KEY},
    )


def fleet(serving: Serving) -> Dict[str, Any]:
    delivery = serving.status()["delivery"]
    assert delivery is not None and delivery["background"] is False  # the store is not delivered
    return dict(delivery["fleet"])


def test_the_fleet_role_moves_to_the_standby_when_the_leader_is_killed(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    rng = random.Random(71)
    saved = Saved()
    first = deliverer(tmp_path, "a", nats_server, stub)
    second = None
    producer = Serving(tmp_path, tmp_path / "p", "--relay", nats_server.url)
    try:
        wait_for(lambda: fleet(first)["role"] == "leader", 20, "the first deliverer to lead")
        second = deliverer(tmp_path, "b", nats_server, stub)
        wait_for(lambda: fleet(second)["state"] == "connected", 20, "the second to connect")
        status = fleet(second)
        assert (status["role"], status["leaderSince"]) == ("standby", None)
        status = fleet(first)
        assert status["leaderSince"] is not None and status["stream"]["name"] == "PUSH_OUTBOX"
        assert (leader_value(nats_server) or {}).get("pid") == first.proc.pid

        producer.save_random(rng, 0, 600, saved)
        expected = Counter(saved_events(saved))
        wait_for(
            lambda: not (expected - Counter(received_events(stub.accepted_objects()))),
            60,
            "every event at the stub",
        )
        wait_for(
            lambda: (
                fleet(first)["stream"]["messages"] == 0
                and fleet(first)["delivered"] == len(saved.items)
            ),
            10,
            "the leader to count the stream drained",
        )
        assert fleet(second)["delivered"] == 0

        first.proc.kill()  # kill -9
        first.wait(10)
        wait_for(lambda: fleet(second)["role"] == "leader", 20, "the standby to lead")
        assert fleet(second)["leaderSince"] is not None
        wait_for(
            lambda: (leader_value(nats_server) or {}).get("pid") == second.proc.pid,
            10,
            "the KV to name it",
        )
        producer.save_random(rng, 600, 300, saved)
        expected = Counter(saved_events(saved))
        wait_for(
            lambda: not (expected - Counter(received_events(stub.accepted_objects()))),
            60,
            "the new leader's deliveries",
        )
        wait_for(lambda: stream_count(nats_server, "PUSH_OUTBOX") == 0, 10, "the acks")
    finally:
        assert producer.close() == 0, producer.stderr()
        if second is not None:
            assert second.close() == 0, second.stderr()
        if first.proc.poll() is None:
            first.close()
