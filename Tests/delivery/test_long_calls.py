"""Long calls over the real binary: `deliverPending` runs off the request path, is cancelled by
`$/cancelRequest` / `notifications/cancelled`, and reports progress (Protocol/README.md, "Long calls").

The Braze stub holds its answers behind a gate the test opens, so every ordering asserted here is
forced by the test, never by how fast the machine is."""

from __future__ import annotations

import random
import threading

import pytest
from braze_stub import Reply
from long_call_session import Session, until


def gated(stub) -> threading.Event:
    """The stub answers nothing until the returned event is set."""
    gate = threading.Event()

    def respond(body):
        gate.wait(60)
        return Reply()

    stub.responder = respond
    return gate


def save_events(session: Session, names_users):
    for n, (name, user) in enumerate(names_users):
        reply = session.call(
            "saveCustomEvent", {"name": name, "user": {"externalId": user}}, id=f"save-{n}"
        )
        assert "result" in reply, reply


def test_status_and_saves_are_answered_while_a_pass_waits_on_braze(stub, outbox):
    gate = gated(stub)
    session = Session(outbox())
    save_events(session, [(f"e{n}", f"u{n}") for n in range(3)])
    session.send("deliverPending", {}, id="pass")
    until(lambda: stub.in_flight >= 1)  # the pass is waiting on Braze
    status = session.call("status", id="status")
    assert status["result"]["delivery"]["inFlight"] >= 1
    assert "result" in session.call(
        "saveCustomEvent", {"name": "late", "user": {"externalId": "u9"}}, id="late"
    )
    assert not [m for m in session.seen if m.get("id") == "pass"], (
        "the pass answered before Braze did"
    )
    gate.set()
    result = session.reply("pass")["result"]
    assert result["delivered"] + result["remaining"] == 4  # the late save may join the pass
    ids = [m.get("id") for m in session.seen]
    assert ids.index("status") < ids.index("pass") and ids.index("late") < ids.index("pass")
    assert session.close() == []


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_cancel_mid_pass_loses_nothing_and_sends_nothing_twice(stub, outbox, seed):
    rng = random.Random(seed)
    gate = gated(stub)
    in_flight, batch = rng.randint(1, 4), rng.randint(1, 5)
    box = outbox("--braze-max-in-flight", str(in_flight), "--track-batch-limit", str(batch))
    session = Session(box)
    saved = [(f"e{n}", f"u{rng.randint(0, 6)}") for n in range(rng.randint(25, 45))]
    save_events(session, saved)
    cancel = rng.choice([("$/cancelRequest", "id"), ("notifications/cancelled", "requestId")])
    session.send("deliverPending", {}, id=7)
    until(lambda: stub.in_flight >= 1)
    session.send(cancel[0], {cancel[1]: 7})
    reply = session.reply(7, timeout=15)  # while Braze still holds every answer
    assert (
        reply["error"]["code"] == -32800 and reply["error"]["data"]["reason"] == "request_cancelled"
    )
    gate.set()
    # The requests in flight finish in the background and are applied as usual.
    until(lambda: session.call("status", id="s")["result"]["delivery"]["inFlight"] == 0)
    received = [o["name"] for o in stub.objects()]
    pending = [i["name"] for i in session.call("flushPending", {}, id="f")["result"]["items"]]
    # The plain model: every saved item was either received once by Braze or is still pending.
    assert len(received) == len(set(received)), "an item was sent twice"
    assert sorted(received + pending) == sorted(name for name, _ in saved), "an item was lost"
    assert pending, "the cancelled pass went on sending"  # at most 4 x 5 objects fit in flight
    status = session.call("status", id="s2")["result"]
    assert status["delivery"]["delivered"] == len(received)
    rest = session.close()
    assert [m.get("id") for m in session.seen + rest].count(7) == 1, "one request, one reply"


def test_cancelling_an_unknown_or_finished_id_does_nothing(stub, outbox):
    gate = gated(stub)
    session = Session(outbox())
    save_events(session, [("a", "u1"), ("b", "u2")])
    session.send("deliverPending", {}, id="pass")
    until(lambda: stub.in_flight >= 1)
    session.send("$/cancelRequest", {"id": "other"})
    session.send("notifications/cancelled", {"requestId": 12, "reason": "no such call"})
    session.send("status", None, "st")
    assert session.next()["id"] == "st"  # nothing else came: no reply to the cancels
    gate.set()
    assert session.next()["result"]["delivered"] == 2  # the pass was not touched
    for method, key in (("$/cancelRequest", "id"), ("notifications/cancelled", "requestId")):
        session.send(method, {key: "pass"})  # finished: nothing happens
    session.send("status", None, "st2")
    assert session.next()["id"] == "st2"
    assert session.close() == []


def test_a_notification_of_delivery_runs_to_its_end_unanswered(stub, outbox):
    session = Session(outbox())
    save_events(session, [(f"e{n}", f"u{n % 3}") for n in range(9)])
    session.send("deliverPending", {})  # no id: a notification
    rest = session.close()  # end of input right away: the pass still runs to its end before exit
    assert rest == [], "a notification was answered"
    assert sorted(o["name"] for o in stub.accepted_objects()) == sorted(f"e{n}" for n in range(9))
    assert session.box.proc.returncode == 0


def test_end_of_input_answers_a_pass_in_progress_first(stub, outbox):
    gate = gated(stub)
    session = Session(outbox())
    save_events(session, [("a", "u1")])
    session.send("deliverPending", {}, id="pass")
    until(lambda: stub.in_flight >= 1)
    threading.Timer(0.2, gate.set).start()
    rest = session.close()
    assert [m["id"] for m in rest] == ["pass"] and rest[0]["result"]["delivered"] == 1


@pytest.mark.parametrize("tokens", ["workDone", "mcp", "both"])
def test_progress_is_well_formed_and_at_most_ten_a_second(stub, outbox, tokens):
    stub.responder = lambda body: Reply(stall=0.004)
    session = Session(outbox("--track-batch-limit", "1", "--braze-max-in-flight", "2"))
    count = 150
    save_events(session, [(f"e{n}", f"u{n}") for n in range(count)])
    params = {}
    if tokens in ("workDone", "both"):
        params["workDoneToken"] = "wd-1"
    if tokens in ("mcp", "both"):
        params["_meta"] = {"progressToken": 99, "other": "ignored"}
    session.send("deliverPending", params, id="pass")
    sent_at = session.seen[-1]["_at"]  # the last save's reply: the pass was sent right after it
    reply = session.reply("pass", timeout=120)
    assert reply["result"]["delivered"] == count
    elapsed = reply["_at"] - sent_at
    notes = [m for m in session.seen if m.get("method")]
    assert all(m["_at"] <= reply["_at"] for m in notes)
    lsp = [m["params"] for m in notes if m["method"] == "$/progress"]
    mcp = [m["params"] for m in notes if m["method"] == "notifications/progress"]
    assert len(notes) == len(lsp) + len(mcp)
    if "workDoneToken" in params:
        assert all(p["token"] == "wd-1" for p in lsp)
        kinds = [p["value"]["kind"] for p in lsp]
        assert kinds[0] == "begin" and kinds[-1] == "end" and set(kinds[1:-1]) <= {"report"}
        assert (
            lsp[0]["value"]["title"] == "deliverPending" and lsp[0]["value"]["cancellable"] is True
        )
        percentages = [p["value"]["percentage"] for p in lsp if "percentage" in p["value"]]
        assert percentages == sorted(percentages) and all(0 <= x <= 100 for x in percentages)
        assert lsp[-1]["value"]["message"] == f"{count}/{count} items"
        assert len(lsp) <= 10 * elapsed + 2, f"{len(lsp)} messages in {elapsed:.2f} s"
        assert len(lsp) >= 3 or elapsed < 0.3, "no report during a long pass"
    else:
        assert lsp == []
    if "_meta" in params:
        assert all(p["progressToken"] == 99 for p in mcp)
        progress = [p["progress"] for p in mcp]
        assert progress == sorted(set(progress)), "progress must increase with each notification"
        assert progress[-1] == count and all(p["total"] >= p["progress"] for p in mcp)
        assert len(mcp) <= 10 * elapsed + 2, f"{len(mcp)} messages in {elapsed:.2f} s"
    else:
        assert mcp == []
    assert session.close() == []
