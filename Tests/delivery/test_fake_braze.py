"""`push-outbox fake-braze`: the Braze fake in the binary (Clients/testing.md). Its checks, its
answers' shapes, keep-alive and concurrency, delays that hold only their own connection, the record
file, the scripted faults and the rate limit, and the outbox delivering through it."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conftest import ROOT, Outbox, binary

sys.path.insert(0, str(ROOT / "Clients" / "python" / "src"))
from push_outbox.testing import FakeBraze  # noqa: E402

pytestmark = pytest.mark.timeout(120)
KEY = "fake-test-key-0123456789"
T = "2026-01-01T00:00:00Z"


@pytest.fixture
def fake(request):
    marker = request.node.get_closest_marker("fake_args")
    started = FakeBraze.start(api_key=KEY, binary=binary(), args=list(marker.args) if marker else [])
    yield started
    started.close()


def post(
    fake: FakeBraze, body: Any, key: Optional[str] = KEY, conn: Optional[http.client.HTTPConnection] = None,
    path: str = "/users/track",
) -> Tuple[int, Dict[str, str], Any]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, raw, headers)
    answer = conn.getresponse()
    data = answer.read()
    if own:
        conn.close()
    return answer.status, dict(answer.getheaders()), json.loads(data) if data else None


def event(n: int = 0, **extra: Any) -> Dict[str, Any]:
    return {"external_id": f"u{n}", "name": f"e{n}", "time": T, **extra}


def test_a_good_body_is_201_success_with_counts(fake):
    status, _, answer = post(fake, {"events": [event(0), event(1)], "attributes": [{"external_id": "u1", "a": 1}]})
    assert status == 201
    assert answer == {"message": "success", "attributes_processed": 1, "events_processed": 2}


@pytest.mark.parametrize(
    "body, message",
    [
        (b"{nope", "Invalid JSON"),
        ([], "must be a JSON object"),
        ({"events": {}}, "'events' must be an array"),
        ({"event": []}, "unknown key 'event'"),
        ({"events": [event(n) for n in range(76)]}, "Max Input Length Exceeded"),
    ],
)
def test_a_malformed_body_is_400(fake, body, message):
    status, _, answer = post(fake, body)
    assert status == 400 and message in answer["message"], answer


def test_seventy_five_per_array_pass(fake):
    body = {"events": [event(n) for n in range(75)], "attributes": [{"external_id": "u", "a": n} for n in range(75)]}
    assert post(fake, body)[0] == 201


@pytest.mark.fake_args("--combined-limit")
def test_the_combined_limit_counts_across_arrays(fake):
    body = {"events": [event(n) for n in range(40)], "attributes": [{"external_id": "u", "a": n} for n in range(36)]}
    status, _, answer = post(fake, body)
    assert status == 400 and "combined" in answer["message"]


@pytest.mark.parametrize("key", [None, "wrong"])
def test_a_missing_or_wrong_key_is_401(fake, key):
    status, _, answer = post(fake, {"events": [event()]}, key=key)
    assert (status, answer) == (401, {"message": "Invalid API key"})


@pytest.mark.parametrize(
    "obj, message",
    [
        ({"name": "e", "time": T}, "'external_id', 'user_alias', 'braze_id', 'email' or 'phone' is required"),
        ({"external_id": 5, "name": "e", "time": T}, "'external_id' must be a non-empty string"),
        ({"user_alias": {"alias_name": "a"}, "name": "e", "time": T}, "'user_alias' must be an object"),
        ({"external_id": "u", "time": T}, "'name' is required"),
        ({"external_id": "u", "name": "e"}, "'time' is required"),
        ({"external_id": "u", "name": "e", "time": "yesterday"}, "ISO 8601"),
        ({"external_id": "u", "name": "x" * 256, "time": T}, "256 characters; at most 255"),
        ({"external_id": "u", "name": "e", "time": T, "properties": []}, "'properties' must be an object"),
        ({"external_id": "u", "name": "e", "time": T, "_update_existing_only": "yes"}, "must be a boolean"),
    ],
)
def test_a_bad_event_is_named_by_input_array_and_index(fake, obj, message):
    status, _, answer = post(fake, {"events": [event(), obj]})
    assert status == 201 and answer["events_processed"] == 1
    [error] = answer["errors"]
    assert error["input_array"] == "events" and error["index"] == 1 and message in error["type"], error


def test_purchases_are_checked(fake):
    good = {"external_id": "u", "product_id": "p", "currency": "USD", "price": 1.5, "time": T}
    bad = [dict(good, currency="usd"), dict(good, quantity=101), dict(good, price="1")]
    status, _, answer = post(fake, {"purchases": [good, *bad]})
    assert status == 201 and [e["index"] for e in answer["errors"]] == [1, 2, 3]


def test_keep_alive_serves_many_requests_on_one_connection(fake):
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    for n in range(20):
        assert post(fake, {"events": [event(n)]}, conn=conn)[0] == 201
    conn.close()
    assert len({r["connection"] for r in fake.requests}) == 1


@pytest.mark.fake_args("--delay-ms", "600")
def test_a_delay_holds_only_its_own_connection(fake):
    """Eight requests each delayed 600 ms, on eight connections at once, all answered in about
    600 ms (not 4.8 s): the fake answers them together, and counts them in flight together."""
    started = time.monotonic()
    threads = [threading.Thread(target=post, args=(fake, {"events": [event(n)]})) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    assert 0.55 < elapsed < 3.0, elapsed
    assert fake.stats()["maxInFlight"] >= 4


def test_the_record_file_holds_each_request_with_the_key_masked(tmp_path):
    record = tmp_path / "requests.jsonl"
    with FakeBraze.start(api_key=KEY, binary=binary(), args=["--record", str(record)]) as fake:
        post(fake, {"events": [event()]})
        post(fake, {"events": [event()]}, key="wrong")
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["seq"], r["status"]) for r in lines] == [(1, 201), (2, 401)]
    assert lines[0]["body"] == {"events": [event()]} and lines[0]["answer"]["message"] == "success"
    assert lines[0]["at"].endswith("Z") and lines[0]["headers"]["authorization"] == "Bearer ***6789"
    assert KEY not in record.read_text()


def test_a_script_by_flag_and_at_run_time(tmp_path):
    with FakeBraze.start(api_key=KEY, binary=binary(), args=["--script", "503,drop", "--retry-after", "7"]) as fake:
        status, headers, _ = post(fake, {"events": [event()]})
        assert status == 503 and headers["Retry-After"] == "7"
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            post(fake, {"events": [event()]})
        fake.script(steps=[{"status": 429, "retryAfter": 2, "headers": {"X-RateLimit-Remaining": "0"}}])
        status, headers, answer = post(fake, {"events": [event()]})
        assert (status, headers["Retry-After"], headers["X-RateLimit-Remaining"]) == (429, "2", "0")
        assert answer == {"message": "API rate limit reached"}
        fake.fail_next(errors=[{"input_array": "events", "index": 0, "type": "scripted"}])
        status, _, answer = post(fake, {"events": [event()]})
        assert status == 201 and answer["errors"] == [{"type": "scripted", "input_array": "events", "index": 0}]
        assert post(fake, {"events": [event()]})[0] == 201  # the script is used up
        stats = fake.stats()
        assert stats["byStatus"] == {"201": 2, "429": 1, "503": 1} and stats["dropped"] == 1


def test_a_bad_script_is_refused_with_its_reason(fake):
    with pytest.raises(RuntimeError, match="steps\\[0\\]: status must be 100 to 599"):
        fake.script(steps=[{"status": 42}])


@pytest.mark.fake_args("--rate-limit", "3/60")
def test_the_rate_limit_answers_429_above_n_per_window(fake):
    answers = [post(fake, {"events": [event()]}) for _ in range(5)]
    assert [a[0] for a in answers] == [201, 201, 201, 429, 429]
    assert [a[1]["X-RateLimit-Remaining"] for a in answers[:3]] == ["2", "1", "0"]
    assert int(answers[3][1]["Retry-After"]) > 0 and int(answers[3][1]["X-RateLimit-Reset"]) > time.time()


def test_hostile_input_gets_an_answer_and_the_fake_keeps_serving(fake):
    for raw in [b"GARBAGE\r\n\r\n", b"POST /users/track HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n"]:
        conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
        conn.connect()
        conn.sock.sendall(raw)
        assert conn.sock.recv(100).startswith(b"HTTP/1.1 4")
        conn.close()
    assert post(fake, {"events": [event()]})[0] == 201


def test_the_outbox_delivers_through_the_fake_and_it_sees_every_object(fake, tmp_path):
    """The fake as delivery's Braze: 300 events for 30 users arrive once each, in save order per user,
    within the limits Braze documents, with no request refused."""
    box = Outbox(str(tmp_path / "store"), ["--deliver", "--braze-endpoint", fake.url], env={"BRAZE_API_KEY": KEY})
    for n in range(300):
        box.save_event(f"e{n}", f"u{n % 30}")
    deadline = time.monotonic() + 30
    while box.result("status")["pending"]["total"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert box.close() == 0
    assert {r["status"] for r in fake.requests} == {201}
    for user in range(30):
        names = [e["name"] for e in fake.events(user=f"u{user}")]
        assert names == [f"e{n}" for n in range(user, 300, 30)]


def test_fake_braze_help_lists_its_own_flags():
    text = subprocess.run([binary(), "fake-braze", "--help"], capture_output=True, text=True, check=True).stdout
    for flag in ["--listen", "--api-key", "--record", "--delay-ms", "--script", "--rate-limit", "--retry-after"]:
        assert flag in text
    assert "--store" not in text and "--braze-endpoint" not in text
