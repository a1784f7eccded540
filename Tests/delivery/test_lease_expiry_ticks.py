"""Leases expire on the loop's own tick (issue 16): an item whose client lease ran out is delivered
by --deliver with no other call, and `push-outbox flush` and `push-outbox deliver` take items whose
lease expired while nothing ran. Before, leases expired only inside status, flushPending, ackFlush,
releaseFlush and deliverPending."""

from __future__ import annotations

import json
import subprocess
import time

from conftest import API_KEY, Outbox, binary
from test_flush_command import env


def test_deliver_sends_an_expired_client_lease_with_no_other_call(stub, outbox):
    box = outbox("--deliver")
    # Take the item under a client lease before background delivery sends it: the save and the
    # lease go in one write, so the loop handles both before its next idle turn.
    assert box.proc.stdin
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 100,
            "method": "saveCustomEvent",
            "params": {"name": "leased", "user": {"externalId": "u2"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 101,
            "method": "flushPending",
            "params": {"leaseMs": 400, "max": 10},
        },
    ]
    box.proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
    box.proc.stdin.flush()
    replies = [json.loads(box.proc.stdout.readline()) for _ in lines]  # type: ignore[union-attr]
    assert [item["id"] for item in replies[1]["result"]["items"]] == [replies[0]["result"]["id"]], (
        replies
    )
    assert stub.requests == []
    # No call from here on: only the loop's tick can expire the lease and hand the item to delivery.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and "leased" not in [
        o.get("name") for o in stub.accepted_objects()
    ]:
        time.sleep(0.05)
    assert "leased" in [o.get("name") for o in stub.accepted_objects()], box.stderr_text()
    assert box.close() == 0


def lease_and_leave(store: str, count: int, lease_ms: int) -> None:
    box = Outbox(store, [], env={})
    for n in range(count):
        box.save_event(f"e{n}", "u")
    leased = box.result("flushPending", {"leaseMs": lease_ms})
    assert len(leased["items"]) == count
    assert box.close() == 0  # the lease is durable: it outlives this process


def test_flush_takes_items_whose_lease_expired_while_nothing_ran(store_dir):
    lease_and_leave(store_dir, 3, 300)
    time.sleep(0.6)
    done = subprocess.run(
        [binary(), "flush", "--store", store_dir], capture_output=True, env=env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert sorted(json.loads(line)["name"] for line in lines) == ["e0", "e1", "e2"], done.stderr


def test_deliver_takes_items_whose_lease_expired_while_nothing_ran(stub, store_dir):
    lease_and_leave(store_dir, 2, 300)
    time.sleep(0.6)
    done = subprocess.run(
        [binary(), "deliver", "--store", store_dir, "--braze-endpoint", stub.url],
        capture_output=True,
        env={**env(), "BRAZE_API_KEY": API_KEY},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(o.get("name") for o in stub.accepted_objects()) == ["e0", "e1"], done.stderr
