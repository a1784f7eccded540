"""Issue 42, item 7: the integrators' sharp edges, each over the binary. Delivery is checked against
the Python stub (braze_stub.py), an oracle independent of the fake in the binary."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from braze_stub import Reply
from conftest import API_KEY, ROOT, Outbox, binary

pytestmark = pytest.mark.timeout(120)


def run(*args: str, stdin: bytes = b"", env=None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([binary(), *args], input=stdin, capture_output=True, env=env, timeout=timeout)


def lines(*messages) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def save(n: int, user=None, **params) -> dict:
    if user is not None:
        params["user"] = {"externalId": user}
    return {"jsonrpc": "2.0", "id": n, "method": "saveCustomEvent", "params": {"name": f"e{n}", **params}}


def test_params_null_counts_as_absent_for_every_method():
    methods = json.loads((ROOT / "Protocol" / "openrpc.json").read_text())["methods"]
    names = [m["name"] for m in methods if m["name"] != "exit"]
    sent = [{"jsonrpc": "2.0", "id": n, "method": name, "params": None} for n, name in enumerate(names)]
    done = run("--memory", stdin=lines(*sent))
    replies = {r["id"]: r for r in map(json.loads, done.stdout.decode().splitlines())}
    refused = {names[i]: r["error"] for i, r in replies.items() if r.get("error", {}).get("code") == -32600}
    assert refused == {} and len(replies) == len(names), refused


def test_an_unknown_method_suggests_the_nearest():
    done = run("--memory", stdin=lines({"jsonrpc": "2.0", "id": 1, "method": "saveCustomEvnt", "params": {}}))
    error = json.loads(done.stdout)["error"]
    assert error["code"] == -32601
    assert error["data"] == {"method": "saveCustomEvnt", "didYouMean": "saveCustomEvent"}


def test_an_endpoint_naming_users_track_is_refused_with_the_base_url():
    done = run("--memory", "--braze-endpoint", "https://rest.iad-01.braze.com/users/track")
    assert done.returncode == 2
    assert b"give the base URL, https://rest.iad-01.braze.com:" in done.stderr, done.stderr


def test_ack_help_lists_only_what_ack_uses():
    text = run("ack", "--help").stdout.decode()
    assert "--store" in text and "--fsync" in text
    for flag in ["--threads", "--braze-rate", "--framing", "--metrics-listen", "--max-batch", "--relay"]:
        assert flag not in text, flag
    assert len(text.splitlines()) <= 40, len(text.splitlines())


def test_an_event_without_properties_is_sent_without_the_key(stub, tmp_path):
    sent = lines(save(1, "u1"), save(2, "u1", properties={"step": 1}), save(3, "u1", properties={}))
    done = run("--store", str(tmp_path / "s"), "--deliver", "--braze-endpoint", stub.url, stdin=sent,
               env={"BRAZE_API_KEY": API_KEY})
    assert done.returncode == 0, done.stderr
    events = [o for o in stub.accepted_objects()]
    assert [("properties" in e, e.get("properties")) for e in events] == [(False, None), (True, {"step": 1}), (False, None)]


def test_deliver_keeps_delivering_after_stdin_ends(stub, tmp_path):
    """`producer | push-outbox --deliver`: everything produced reaches Braze before the exit."""
    stub.queue(Reply(status=503))  # one failure on the way: retried within the drain
    done = run("--store", str(tmp_path / "s"), "--deliver", "--braze-endpoint", stub.url,
               "--braze-backoff-ms", "50", stdin=lines(*[save(n, f"u{n % 7}") for n in range(200)]),
               env={"BRAZE_API_KEY": API_KEY})
    assert done.returncode == 0, done.stderr
    assert sorted(o["name"] for o in stub.accepted_objects()) == sorted(f"e{n}" for n in range(200))


def test_the_drain_stops_at_its_timeout_and_keeps_the_rest(stub, tmp_path):
    stub.responder = lambda body: Reply(status=503)
    started = time.monotonic()
    done = run("--store", str(tmp_path / "s"), "--deliver", "--braze-endpoint", stub.url, "--drain-timeout", "1",
               "--braze-backoff-ms", "50", stdin=lines(save(1, "u1")), env={"BRAZE_API_KEY": API_KEY})
    assert done.returncode == 0 and 0.9 < time.monotonic() - started < 20, done.stderr
    assert b"1 still pending (kept for the next start)" in done.stderr, done.stderr
    box = Outbox(str(tmp_path / "s"), [], env={})
    assert box.result("status")["pending"]["total"] == 1
    box.close()


def deliver(stub, store: str, *args: str) -> subprocess.CompletedProcess:
    return run("deliver", "--store", store, "--braze-endpoint", stub.url, "--braze-backoff-ms", "50", *args,
               env={"BRAZE_API_KEY": API_KEY})


def saved(store: str, *messages) -> None:
    assert run("--store", store, stdin=lines(*messages)).returncode == 0


@pytest.mark.parametrize(
    "case, code",
    [("all delivered", 0), ("some dead-lettered", 5), ("some still pending", 6), ("the key refused", 1)],
)
def test_deliver_exit_codes_tell_the_outcomes_apart(stub, tmp_path, case, code):
    store = str(tmp_path / "s")
    saved(store, save(1, "u1"), save(2, "u2"))
    if case == "some dead-lettered":
        stub.queue(Reply(body={"message": "success", "errors": [{"type": "bad", "input_array": "events", "index": 0}]}))
    if case == "some still pending":
        stub.responder = lambda body: Reply(status=503)
    if case == "the key refused":
        stub.responder = lambda body: Reply(status=401, body={"message": "Invalid API key"})
    started = time.monotonic()
    done = deliver(stub, store, "--max-seconds", "1")
    assert done.returncode == code, (done.returncode, done.stderr)
    assert time.monotonic() - started < 15


def test_deliver_max_seconds_bounds_the_retrying(stub, tmp_path):
    store = str(tmp_path / "s")
    saved(store, save(1, "u1"))
    stub.responder = lambda body: Reply(status=503)
    started = time.monotonic()
    done = deliver(stub, store, "--max-seconds", "2")
    elapsed = time.monotonic() - started
    assert done.returncode == 6 and 1.8 < elapsed < 10, (elapsed, done.stderr)
    assert len(stub.requests) > 3  # it kept retrying for those two seconds, not only eight passes


def test_help_and_the_man_page_document_the_exit_codes_and_flags():
    help_text = run("deliver", "--help").stdout.decode()
    man = (ROOT / "Clients" / "share" / "man" / "man1" / "push-outbox.1").read_text()
    for text in (help_text, man.replace("\\-", "-")):
        assert "--max-seconds" in text
        assert "dead-lettered" in text and "still pending" in text
    assert "drain\\-timeout" in man
