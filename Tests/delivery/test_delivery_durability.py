"""At least once: kill -9 during delivery loses nothing; dead letters survive kill -9 and restarts."""

from __future__ import annotations

import time

from braze_stub import Reply


def wait_for(condition, what):
    for _ in range(1000):  # a bounded poll; nothing here is timed
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def test_kill_9_during_delivery_loses_nothing(stub, outbox):
    stub.responder = lambda body: Reply(stall=0.2)
    box = outbox("--deliver", "--track-batch-limit", "5", "--fsync", "always")
    saved = [f"e{n:02d}" for n in range(40)]
    for n, name in enumerate(saved):
        box.save_event(name, f"u{n % 8}")
    wait_for(lambda: len(stub.requests) >= 2, "requests in flight")
    box.kill9()  # requests are in flight, some answered, some not
    stub.responder = None
    box = outbox()
    for _ in range(100):
        if box.result("deliverPending")["remaining"] == 0:
            break
    status = box.result("status")
    assert status["pending"]["total"] == 0 and status["deadLetters"] == 0
    delivered = {o["name"] for o in stub.accepted_objects()}
    assert delivered == set(saved)  # every item reached Braze at least once


def test_kill_9_right_after_a_pass_keeps_dead_letters_and_acks(stub, outbox):
    stub.queue(Reply(status=201, body={"message": "success", "errors": [{"type": "bad", "input_array": "events", "index": 0}]}))
    box = outbox("--fsync", "always")
    for n in range(3):
        box.save_event(f"e{n}", "u1")
    assert box.result("deliverPending")["deadLettered"] == 1
    box.kill9()
    box = outbox()
    assert box.result("status")["pending"]["total"] == 0
    [dead] = box.result("listDeadLetters")["deadLetters"]
    assert dead["item"]["name"] == "e0" and dead["reason"] == "bad"
    assert box.result("deliverPending")["delivered"] == 0 and len(stub.requests) == 1  # nothing sent twice
    assert box.result("requeueDeadLetters")["requeued"] == 1
    box.close()
    box = outbox()
    assert box.result("deliverPending")["delivered"] == 1
    assert [o["name"] for o in stub.accepted_objects()] == ["e0", "e1", "e2", "e0"]


def test_dead_letters_survive_compaction_across_restarts(stub, outbox):
    stub.responder = lambda body: Reply(status=400, body={"message": "bad " + body["events"][0]["name"]})
    box = outbox("--snapshot-interval", "0.05")
    for n in range(4):
        box.save_event(f"e{n}", f"u{n}")
    assert box.result("deliverPending")["deadLettered"] == 4
    time.sleep(0.2)  # let a snapshot (checkpoint and compaction) run; the checks below do not depend on it
    box.close()
    for _ in range(2):
        box = outbox("--snapshot-interval", "0.05")
        letters = box.result("listDeadLetters")["deadLetters"]
        assert [(d["item"]["name"], d["reason"]) for d in letters] == [(f"e{n}", f"bad e{n}") for n in range(4)]
        assert box.result("status")["pending"]["total"] == 0
        box.close()
