"""At least once: kill -9 during delivery loses nothing; dead letters survive kill -9 and restarts."""

from __future__ import annotations

import time

import pytest

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


@pytest.mark.parametrize("limit_kib", [1024, 1536, 2048, 2560])
def test_a_stream_delivered_while_its_journal_fails_sends_only_acknowledged_saves(stub, tmp_path, limit_kib):
    """Saves piped in as fast as they are read, with `--deliver`: bursts are written off the loop's
    thread and delivery's leases go with those writes. A file size limit makes a write fail
    mid-stream. Braze gets nothing that was refused, and every acknowledged save is delivered or
    still held after a restart. Four limits (all under the stream's ~2.8 MB of journal) move the
    failed write against delivery's leases: a lease made while that write was in the air must be
    given back unsent (`Deliverer.sendLeased`); sending it anyway reached Braze with refused saves
    in 1-2 of the 4 in each of 5 runs."""
    import json
    import resource
    import subprocess

    from conftest import API_KEY, binary

    count = 20_000
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": n, "method": "saveCustomEvent",
                    "params": {"name": "e", "user": {"externalId": f"u{n % 500}"}, "properties": {"n": n}}})
        for n in range(count)
    ]
    source = tmp_path / "saves.jsonl"
    source.write_text("\n".join(lines) + "\n")
    store = str(tmp_path / "store")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_kib << 10, resource.RLIM_INFINITY))

    # No snapshot during the stream: its compaction would start new segments, each under the limit.
    args = [binary(), "--store", store, "--deliver", "--braze-endpoint", stub.url, "--braze-backoff-ms", "20",
            "--drain-timeout", "2", "--snapshot-interval", "3600"]
    with open(source, "rb") as inp:
        proc = subprocess.run(args, stdin=inp, capture_output=True, timeout=120, preexec_fn=limit,
                              env={"BRAZE_API_KEY": API_KEY, "PATH": "/usr/bin:/bin"})
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == list(range(count)), "one reply per save, in order"
    acked = {r["id"] for r in replies if "result" in r}
    refused = {r["id"] for r in replies if "error" in r}
    assert all(r["error"]["code"] == -32003 for r in replies if "error" in r)
    assert refused and len(acked) > 1000, (len(acked), len(refused), proc.stderr[-600:])

    delivered = {o["properties"]["n"] for o in stub.accepted_objects()}
    assert not delivered & refused, f"refused saves reached Braze: {sorted(delivered & refused)[:5]}"
    # With delivery configured, the next start gives back the delivery leases the last one left
    # (one whose release could not be written hides its items until it expires).
    restarted = subprocess.run([binary(), "--store", store, "--braze-endpoint", stub.url],
                               input=b'{"jsonrpc":"2.0","id":1,"method":"flushPending"}\n',
                               capture_output=True, timeout=60, env={"BRAZE_API_KEY": API_KEY, "PATH": "/usr/bin:/bin"})
    held = {item["properties"]["n"] for item in json.loads(restarted.stdout.splitlines()[0])["result"]["items"]}
    assert not held & refused, f"refused saves were stored: {sorted(held & refused)[:5]}"
    missing = acked - delivered - held
    assert not missing, f"acknowledged saves neither delivered nor held: {sorted(missing)[:5]} of {len(missing)}"
