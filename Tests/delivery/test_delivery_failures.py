"""How delivery answers each status code, stalls and dropped connections (Protocol/delivery.md)."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from braze_stub import Reply


def names(objects):
    return [o.get("name") for o in objects]


def deliver_until_done(box, rounds=400):
    """Runs passes until nothing is pending (a failure pauses delivery for its backoff)."""
    for _ in range(rounds):
        result = box.result("deliverPending")
        if (
            result["remaining"] == 0
            and result["retrying"] == 0
            and box.result("status")["delivery"]["inFlight"] == 0
        ):
            return
        time.sleep(0.02)
    raise AssertionError(f"still pending: {box.result('status')}")


def delivery_counts(box):
    """The deliveryCount of every pending item (read through a lease that is then released)."""
    lease = box.result("flushPending", {"leaseMs": 60000})
    counts = [item["deliveryCount"] for item in lease["items"]]
    box.result("releaseFlush", {"flushId": lease["flushId"]})
    return counts


def test_a_2xx_with_errors_dead_letters_only_the_named_objects(stub, outbox):
    errors = [{"type": "'name' is required", "input_array": "events", "index": 1}]
    stub.queue(Reply(status=201, body={"message": "success", "errors": errors}))
    box = outbox()
    for n in range(3):
        box.save_event(f"e{n}", "u1")
    assert box.result("deliverPending") == {
        "delivered": 2,
        "deadLettered": 1,
        "retrying": 0,
        "remaining": 0,
    }
    [dead] = box.result("listDeadLetters")["deadLetters"]
    assert dead["item"]["name"] == "e1" and dead["reason"] == "'name' is required"
    assert box.result("status")["pending"]["total"] == 0


def test_a_400_is_split_until_the_bad_object_is_alone(stub, outbox):
    def judge(body):
        bad = any(e["name"] == "bad" for e in body.get("events", []))
        return Reply(status=400, body={"message": "Invalid event"}) if bad else Reply()

    stub.responder = judge
    box = outbox()
    for n in range(8):
        box.save_event("bad" if n == 5 else f"e{n}", "u1")
    result = box.result("deliverPending")
    assert result["deadLettered"] == 1 and result["delivered"] == 7 and result["remaining"] == 0
    assert sorted(names(stub.accepted_objects())) == sorted(f"e{n}" for n in range(8) if n != 5)
    assert names(stub.accepted_objects()).count("e4") == 1  # each good object delivered once
    [dead] = box.result("listDeadLetters")["deadLetters"]
    assert dead["item"]["name"] == "bad" and dead["reason"] == "Invalid event"
    sent = [o["name"] for o in stub.accepted_objects()]
    assert [n for n in sent if n != "bad"] == sorted(
        n for n in sent if n != "bad"
    )  # order kept for the user


@pytest.mark.parametrize("status", [401, 403, 404])
def test_configuration_errors_stop_delivery_and_keep_every_item(stub, outbox, status):
    stub.responder = lambda body: Reply(status=status, body={"message": "nope"})
    box = outbox()
    for n in range(3):
        box.save_event(f"e{n}", "u1")
    result = box.result("deliverPending")
    assert result == {"delivered": 0, "deadLettered": 0, "retrying": 3, "remaining": 3}
    delivery = box.result("status")["delivery"]
    assert delivery["configError"] == f"HTTP {status}: nope"
    assert delivery["nextAttemptAt"] is not None
    assert len(stub.requests) == 1
    assert (
        box.result("deliverPending")["retrying"] == 0 and len(stub.requests) == 1
    )  # paused on a long backoff
    box.save_event("still-saving", "u1")
    assert box.result("status")["pending"]["total"] == 4
    assert f"HTTP {status}" in box.stderr_text()
    assert box.result("listDeadLetters")["total"] == 0


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_back_off_and_retry_with_a_rising_delivery_count(stub, outbox, status):
    stub.queue(Reply(status=status), Reply(status=status))
    box = outbox()
    box.save_event("e0", "u1")
    assert box.result("deliverPending") == {
        "delivered": 0,
        "deadLettered": 0,
        "retrying": 1,
        "remaining": 1,
    }
    assert delivery_counts(box) == [1]
    assert box.result("status")["delivery"]["lastError"].startswith(f"HTTP {status}")
    deliver_until_done(box)
    assert len(stub.requests) == 3 and names(stub.accepted_objects()) == ["e0"]


def test_429_honours_retry_after(stub, outbox):
    stub.queue(Reply(status=429, headers={"Retry-After": "30"}))
    box = outbox()
    box.save_event("e0", "u1")
    before = datetime.now(timezone.utc).timestamp()
    assert box.result("deliverPending")["retrying"] == 1
    next_at = box.result("status")["delivery"]["nextAttemptAt"]
    resume = datetime.fromisoformat(next_at.replace("Z", "+00:00")).timestamp()
    assert resume >= before + 29
    assert (
        box.result("deliverPending")["retrying"] == 0 and len(stub.requests) == 1
    )  # waits, sends nothing


def test_429_honours_x_ratelimit_reset(stub, outbox):
    reset = int(datetime.now(timezone.utc).timestamp()) + 40
    stub.queue(
        Reply(status=429, headers={"X-RateLimit-Reset": str(reset), "X-RateLimit-Remaining": "0"})
    )
    box = outbox()
    box.save_event("e0", "u1")
    box.result("deliverPending")
    next_at = box.result("status")["delivery"]["nextAttemptAt"]
    assert datetime.fromisoformat(next_at.replace("Z", "+00:00")).timestamp() >= reset - 0.001
    assert len(stub.requests) == 1


def test_a_stalled_request_times_out_and_is_retried(stub, outbox):
    stub.queue(Reply(stall=3))
    box = outbox("--braze-timeout-ms", "300")
    box.save_event("e0", "u1")
    assert box.result("deliverPending")["retrying"] == 1
    assert "timeout" in box.result("status")["delivery"]["lastError"].lower()
    deliver_until_done(box)
    assert box.result("status")["pending"]["total"] == 0


def test_a_connection_closed_halfway_is_retried(stub, outbox):
    stub.queue(Reply(close_halfway=True))
    box = outbox()
    box.save_event("e0", "u1")
    assert box.result("deliverPending")["retrying"] == 1
    deliver_until_done(box)
    assert len(stub.requests) == 2 and names(stub.accepted_objects()) == ["e0"]


def test_a_refused_connection_keeps_the_items(stub, outbox):
    stub.stop()
    box = outbox()
    box.save_event("e0", "u1")
    assert box.result("deliverPending") == {
        "delivered": 0,
        "deadLettered": 0,
        "retrying": 1,
        "remaining": 1,
    }
    assert box.result("status")["delivery"]["lastError"]


@pytest.mark.parametrize(
    "setback",
    [Reply(status=500), Reply(status=429, headers={"Retry-After": "0"}), Reply(stall=2)],
    ids=["500", "429", "timeout"],
)
def test_a_failed_half_is_never_overtaken_by_its_newer_half(stub, outbox, setback):
    """Issue 40 #1: a 400 splits a batch in two; the older half then gets a retryable answer. Its
    newer sibling must not go out first: one user's later attribute value would be overwritten by
    the older one retried after it (Braze ended with level "t1" instead of "t3")."""

    def judge(body):
        poison = any(e["name"] == "poison" for e in body.get("events", []))
        return Reply(status=400, body={"message": "Invalid event"}) if poison else Reply()

    stub.responder = judge
    stub.queue(Reply(status=400, body={"message": "Invalid event"}), setback)
    box = outbox("--braze-timeout-ms", "500")
    user = {"externalId": "u1"}
    box.result("saveCustomAttribute", {"key": "level", "value": "t1", "user": user})
    box.save_event("e2", "u1")
    box.result("saveCustomAttribute", {"key": "level", "value": "t3", "user": user})
    box.save_event("poison", "u1")
    deliver_until_done(box)
    levels = [o["level"] for o in stub.accepted_objects() if "level" in o]
    assert levels and levels[-1] == "t3", (
        f"Braze ends with level {levels}: the newer half overtook the older"
    )
    assert [o["name"] for o in stub.accepted_objects() if "name" in o] == ["e2"]
    [dead] = box.result("listDeadLetters")["deadLetters"]
    assert dead["item"]["name"] == "poison"
