"""Issue 15, the failed-delivery road: deliveries that fail end their leases with the items pending
again, and the snapshots after that keep every item. (Two failed passes against a stub answering
500, then an exit, once left 0 of 500 items in release builds.) CI runs this file against the
release binary as well as the debug one (.ci/test-all)."""

from __future__ import annotations

import time

from braze_stub import Reply


def test_failed_deliveries_then_snapshots_keep_every_item(stub, outbox):
    stub.responder = lambda body: Reply(status=500, body={"message": "down"})
    box = outbox("--snapshot-interval", "0.05", "--braze-backoff-ms", "1")
    saved = {box.save_event(f"e{n:03d}", f"u{n % 7}")["id"] for n in range(200)}
    for _ in range(2):
        result = box.result("deliverPending")
        assert result["delivered"] == 0 and result["remaining"] == len(saved), result
        time.sleep(0.2)  # snapshots rewrite the segments whose items' delivery counts rose
    box.save_event("later", "u1")
    time.sleep(0.2)
    assert box.close() == 0
    stub.responder = None
    box = outbox("--braze-backoff-ms", "1")
    assert box.result("status")["pending"]["total"] == len(saved) + 1
    for _ in range(50):
        if box.result("deliverPending")["remaining"] == 0:
            break
    assert {o["name"] for o in stub.accepted_objects()} >= {f"e{n:03d}" for n in range(200)} | {
        "later"
    }
    assert box.close() == 0
