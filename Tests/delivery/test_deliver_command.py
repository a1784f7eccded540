"""`push-outbox deliver`: the one-shot for pipelines and cron."""

from __future__ import annotations

import subprocess

from braze_stub import Reply
from conftest import API_KEY, Outbox, binary


def one_shot(stub, store_dir, *args):
    env = {"BRAZE_API_KEY": API_KEY}
    return subprocess.run(
        [
            binary(),
            "deliver",
            "--store",
            store_dir,
            "--braze-endpoint",
            stub.url,
            "--braze-backoff-ms",
            "20",
            *args,
        ],
        input=b"",
        capture_output=True,
        env=env,
        timeout=120,
    )


def test_deliver_sends_everything_and_exits_0(stub, outbox, store_dir):
    box = outbox(endpoint=False, env={})
    for n in range(5):
        box.save_event(f"e{n}", "u1")
    box.close()
    stub.queue(Reply(status=503))  # one transient failure: retried within the run
    run = one_shot(stub, store_dir)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""
    assert run.stderr.decode().strip().splitlines()[-1] == (
        "push-outbox deliver: delivered 5, dead-lettered 0, still pending 0 (retrying 0)"
    )
    assert sorted(o["name"] for o in stub.accepted_objects()) == [f"e{n}" for n in range(5)]
    again = one_shot(stub, store_dir)
    assert again.returncode == 0 and len(stub.requests) == 2


def test_deliver_exits_non_zero_while_items_are_left_retrying(stub, outbox, store_dir):
    box = outbox(endpoint=False, env={})
    box.save_event("e0", "u1")
    box.close()
    stub.responder = lambda body: Reply(status=401, body={"message": "Invalid API key"})
    run = one_shot(stub, store_dir)
    assert run.returncode == 1
    assert (
        "still pending 1 (retrying 1)" in run.stderr.decode() and "HTTP 401" in run.stderr.decode()
    )
    assert API_KEY not in run.stderr.decode()
    box = outbox(endpoint=False, env={})
    assert box.result("status")["pending"]["total"] == 1  # kept


def test_the_summary_adds_up_after_every_round_failed(stub, outbox, store_dir):
    """Issue 17, defect 14: after 8 failed rounds the summary said "retrying 0" with 5 remaining."""
    box = outbox(endpoint=False, env={})
    for n in range(5):
        box.save_event(f"e{n}", f"u{n}")
    box.close()
    stub.responder = lambda body: Reply(status=503)
    run = one_shot(stub, store_dir, "--braze-backoff-ms", "1")
    assert run.returncode == 6  # some still pending
    last = run.stderr.decode().strip().splitlines()[-1]
    assert (
        last == "push-outbox deliver: delivered 0, dead-lettered 0, still pending 5 (retrying 5)"
    ), last


def test_dead_letters_made_by_deliver_are_kept(stub, store_dir):
    """`push-outbox deliver` dead-letters an item with no identifier; the next start still holds it
    as a dead letter (it was reported, then lost: the journal record was never committed before the
    final snapshot, which was abandoned)."""
    box = Outbox(store_dir, [], env={})
    box.save_event("anon", None)
    assert box.close() == 0
    done = one_shot(stub, store_dir)
    assert b"dead-lettered 1" in done.stderr, done.stderr
    assert b"snapshot abandoned" not in done.stderr, done.stderr
    box = Outbox(store_dir, [], env={})
    dead = box.result("listDeadLetters")["deadLetters"]
    assert [d["reason"] for d in dead] == ["no_identifier"]
    assert box.result("status")["pending"]["total"] == 0
    assert box.close() == 0
