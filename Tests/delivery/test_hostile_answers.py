"""Issue 17, defects 2, 3, 8 and 11, over the real binary against a hostile stub on 127.0.0.1: an
endpoint that echoes the API key cannot put it in status, stderr or dead letters (memory or disk);
a forged log line is escaped; codes outside the table never dead-letter; a long reason is cut on a
character boundary, the same before and after a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from braze_stub import Reply
from conftest import API_KEY

FORGED = "x\npush-outbox: info: all delivered\n\x1b[2J"


def store_bytes(box) -> bytes:
    root = Path(box.store)
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_an_echoed_key_and_a_forged_log_line_reach_nothing(stub, outbox):
    stub.queue(Reply(status=401, body={"message": f"bad key {API_KEY} {FORGED}"}))
    box = outbox()
    box.save_event("e0", "u0")
    box.result("deliverPending")
    delivery = box.result("status")["delivery"]
    for text in (delivery["configError"], delivery["lastError"]):
        assert API_KEY not in text and "\x1b" not in text and "\n" not in text, text
    box.close()
    stderr = box.stderr_text()
    assert API_KEY not in stderr and "\x1b" not in stderr
    assert not any(
        line.startswith("push-outbox: info: all delivered") for line in stderr.splitlines()
    ), stderr


def test_an_echoed_key_never_reaches_a_dead_letter_in_memory_or_on_disk(stub, outbox):
    error = {"type": f"{API_KEY} {FORGED}", "input_array": "events", "index": 0}
    stub.queue(Reply(status=201, body={"message": "success", "errors": [error]}))
    box = outbox("--fsync", "always", "--snapshot-interval", "0.05")
    box.save_event("e0", "u0")
    assert box.result("deliverPending")["deadLettered"] == 1
    [dead] = box.result("listDeadLetters")["deadLetters"]
    assert API_KEY not in dead["reason"] and "\n" not in dead["reason"], dead
    assert box.close() == 0
    assert API_KEY.encode() not in store_bytes(box)
    again = outbox()
    assert again.result("listDeadLetters")["deadLetters"][0]["reason"] == dead["reason"]


@pytest.mark.parametrize("status", [408, 409, 425, 600, 999])
def test_codes_outside_the_split_rows_keep_every_item(stub, outbox, status):
    stub.responder = lambda body: Reply(status=status, body={"message": "odd"})
    box = outbox("--braze-backoff-ms", "1")
    for n in range(6):
        box.save_event(f"e{n}", f"u{n}")
    result = box.result("deliverPending")
    assert result["deadLettered"] == 0 and result["delivered"] == 0, result
    status_now = box.result("status")
    assert status_now["deadLetters"] == 0 and status_now["pending"]["total"] == 6


def test_a_long_reason_is_cut_on_a_character_boundary_the_same_in_memory_and_on_disk(stub, outbox):
    stub.queue(Reply(status=400, body={"message": "é" * 3000}))
    box = outbox("--fsync", "always")
    box.save_event("e0", "u0")
    box.result("deliverPending")
    [dead] = box.result("listDeadLetters")["deadLetters"]
    assert "\ufffd" not in dead["reason"] and set(dead["reason"]) == {"é"}, dead["reason"][:20]
    assert box.close() == 0
    again = outbox()
    assert again.result("listDeadLetters")["deadLetters"][0]["reason"] == dead["reason"]


@pytest.mark.parametrize("cut", ["reset mid-body", "body over 1 MiB"])
def test_a_2xx_whose_body_is_cut_off_is_delivered_not_sent_again(stub, outbox, cut):
    """Issue 17, defect 9: a complete status line and headers with a 2xx mean accepted."""
    reply = Reply(cut_body=True) if cut == "reset mid-body" else Reply(pad_bytes=2 << 20)
    stub.queue(reply)
    box = outbox("--braze-backoff-ms", "1")
    for n in range(3):
        box.save_event(f"e{n}", "u1")
    result = box.result("deliverPending")
    assert result["delivered"] == 3 and result["remaining"] == 0, result
    assert box.result("deliverPending")["delivered"] == 0
    assert len(stub.requests) == 1  # never sent again
