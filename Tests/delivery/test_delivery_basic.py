"""Delivery to the local Braze stub (the request, the key) and to push-outbox fake-braze (batching,
per-user order, the limiter, connection reuse)."""

from __future__ import annotations

import json
from datetime import datetime

import os
import subprocess
import time
from pathlib import Path

from braze_stub import Reply
from conftest import API_KEY, binary


def names(objects):
    return [o.get("name") for o in objects]


def test_a_pass_posts_users_track_with_the_bearer_key_and_acks(stub, outbox):
    box = outbox()
    for n in range(3):
        box.save_event(f"e{n}", "u1", time="2025-01-02T03:04:05Z")
    result = box.result("deliverPending")
    assert result == {"delivered": 3, "deadLettered": 0, "retrying": 0, "remaining": 0}
    [request] = stub.requests
    assert request.path == "/users/track"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert names(request.body["events"]) == ["e0", "e1", "e2"]
    assert {e["time"] for e in request.body["events"]} == {"2025-01-02T03:04:05.000Z"}  # the saved time
    assert all(e["external_id"] == "u1" for e in request.body["events"])
    status = box.result("status")
    assert status["pending"]["total"] == 0
    assert status["delivery"]["delivered"] == 3
    assert box.result("deliverPending") == {"delivered": 0, "deadLettered": 0, "retrying": 0, "remaining": 0}
    assert len(stub.requests) == 1


# These run against push-outbox fake-braze (no oracle independent of the binary is needed: what is
# checked is what the outbox sent), and every body must also pass the fake's own Braze rules.


def bodies(fake):
    records = fake.requests
    assert [(r["status"], r["answer"].get("errors")) for r in records] == [(201, None)] * len(records), records
    return [r["body"] for r in records]


def arrival(record) -> float:
    return datetime.fromisoformat(record["at"].replace("Z", "+00:00")).timestamp()


def test_requests_reuse_their_connection(fake, outbox_on_fake):
    box = outbox_on_fake()
    for n in range(6):
        box.save_event(f"e{n}", f"u{n}")
        assert box.result("deliverPending")["delivered"] == 1
    assert len(bodies(fake)) == 6
    assert len({r["connection"] for r in fake.requests}) == 1  # one keep-alive connection, not six


def test_bodies_hold_at_most_75_objects_combined(fake, outbox_on_fake):
    box = outbox_on_fake()
    for n in range(60):
        box.result("saveCustomAttribute", {"key": "k", "value": n, "user": {"externalId": "u"}})
        box.save_event(f"e{n}", "u")
    assert box.result("deliverPending")["delivered"] == 120
    sizes = [len(b["attributes"]) + len(b["events"]) for b in bodies(fake)]
    assert sizes == [75, 45]
    values = [a["k"] for b in bodies(fake) for a in b["attributes"]]
    assert values == list(range(60))  # attribute order kept across bodies


def test_per_array_mode_and_the_batch_limit(fake, outbox_on_fake):
    box = outbox_on_fake("--track-batch-mode", "per-array", "--track-batch-limit", "50")
    for n in range(60):
        box.result("saveCustomAttribute", {"key": "k", "value": n, "user": {"externalId": "u"}})
        box.save_event(f"e{n}", "u")
    box.result("deliverPending")
    assert [(len(b["attributes"]), len(b["events"])) for b in bodies(fake)] == [(50, 50), (10, 10)]


def test_an_item_with_no_identifier_is_dead_lettered_not_sent(stub, outbox):
    box = outbox()
    box.save_event("anonymous", None)
    box.save_event("known", "u1")
    assert box.result("deliverPending") == {"delivered": 1, "deadLettered": 1, "retrying": 0, "remaining": 0}
    assert names(stub.objects()) == ["known"]
    [dead] = box.result("listDeadLetters")["deadLetters"]
    assert dead["reason"] == "no_identifier" and dead["item"]["name"] == "anonymous"


def test_never_two_requests_for_one_user_in_flight_and_order_is_kept(fake, outbox_on_fake):
    fake.script(delayMs=20)  # every answer after 20 ms: requests overlap
    box = outbox_on_fake("--track-batch-limit", "3", "--braze-max-in-flight", "4")
    users = ["a", "b", "c", "d", "e"]
    for n in range(30):
        box.save_event(f"{n:02d}", users[n % len(users)])
    assert box.result("deliverPending")["remaining"] == 0
    assert fake.stats()["maxInFlight"] > 1  # requests did overlap, so the check below means something
    spans = [
        (arrival(r), arrival(r) + r["delayMs"] / 1000, {o["external_id"] for o in r["body"]["events"]})
        for r in fake.requests
    ]
    for n, (at, done, who) in enumerate(spans):
        for other_at, other_done, other_who in spans[n + 1 :]:
            if at < other_done and other_at < done:  # in flight together (the fake's ms clock)
                assert not (who & other_who), "two requests for one user were in flight at once"
    for user in users:
        sent = [e["name"] for e in fake.events(user=user)]
        assert sent == sorted(sent) and len(sent) == 6


def test_the_limiter_keeps_under_the_configured_rate(fake, outbox_on_fake):
    box = outbox_on_fake("--braze-rate", "3/0.5", "--track-batch-limit", "1", "--braze-max-in-flight", "8")
    for n in range(12):
        box.save_event(f"e{n}", f"u{n}")
    assert box.result("deliverPending")["delivered"] == 12
    assert len(bodies(fake)) == 12
    times = sorted(arrival(r) for r in fake.requests)
    # at most 3 in any 0.5 s, on the fake's millisecond clock (a request at the window's edge counts in it)
    assert all(times[n + 3] - times[n] >= 0.5 - 0.002 for n in range(len(times) - 3)), times
    assert box.result("status")["delivery"]["rate"] == "3/0.5"


def test_background_delivery_with_deliver(fake, outbox_on_fake):
    box = outbox_on_fake("--deliver")
    box.save_event("bg", "u1")
    for _ in range(1000):  # generous: the loop polls, it never times a result
        if box.result("status")["pending"]["total"] == 0:
            break
        time.sleep(0.02)
    else:
        raise AssertionError("--deliver did not deliver")
    assert names(fake.events()) == ["bg"]
    assert box.result("status")["delivery"]["background"] is True


def test_the_key_never_appears_in_status_errors_logs_or_files(stub, outbox, store_dir):
    stub.queue(Reply(status=401, body={"message": "Invalid API key"}))
    box = outbox("--log-level", "debug")
    box.save_event("e", "u1")
    box.result("deliverPending")
    texts = [str(box.result("status")), str(box.call("deliverPending", {"max": 0}))]
    box.close()
    texts.append(box.stderr_text())
    for path in Path(store_dir).rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("latin-1"))
    assert "Invalid API key" in texts[0]  # the error is reported...
    assert not any(API_KEY in text for text in texts)  # ...the key never


def test_the_key_file_is_read_and_plain_http_is_refused_off_loopback(stub, outbox, store_dir, tmp_path):
    key = tmp_path / "key"
    key.write_text("file-key-77\n")
    box = outbox("--braze-api-key-file", str(key), env={})
    box.save_event("e", "u1")
    box.result("deliverPending")
    assert stub.requests[0].headers["Authorization"] == "Bearer file-key-77"
    box.close()
    env = {"BRAZE_API_KEY": API_KEY, "PATH": os.environ.get("PATH", "")}
    for args in (["--braze-endpoint", "http://example.com"], ["--deliver"], ["--braze-endpoint", "ftp://x"]):
        run = subprocess.run([binary(), "--memory", *args], input=b"", capture_output=True, env=env, timeout=30)
        # A usage error: exit 2, and the one id-null start-up line every start-up failure writes.
        assert run.returncode == 2, args
        [line] = run.stdout.decode().splitlines()
        assert json.loads(line)["id"] is None and json.loads(line)["error"]["code"] == -32007, line
        assert len(run.stderr.splitlines()) == 1


def test_start_up_does_not_load_libcurl(stub, outbox):
    box = outbox("--deliver")
    box.result("status")
    maps = Path(f"/proc/{box.proc.pid}/maps")
    if not maps.exists():
        return  # not Linux: nothing to inspect
    assert "libcurl" not in maps.read_text()
    box.save_event("e", "u1")
    box.result("deliverPending")
    assert "libcurl" in maps.read_text()  # loaded by the first request
