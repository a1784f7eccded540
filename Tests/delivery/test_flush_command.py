"""`push-outbox flush`: the one-shot that writes items or /users/track bodies to stdout, one per line,
over the real binary. Nothing leaves the store before its line was written."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import List

from conftest import Outbox, binary


def env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}


def fill(
    store: str, events: int = 0, attributes: int = 0, anonymous: int = 0, user: str = "u"
) -> None:
    box = Outbox(store, [], env={})
    for n in range(attributes):
        box.result("saveCustomAttribute", {"key": "k", "value": n, "user": {"externalId": user}})
    for n in range(events):
        box.save_event(f"e{n}", user)
    for n in range(anonymous):
        box.save_event(f"anon{n}", None)
    assert box.close() == 0


def flush(store: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [binary(), "flush", "--store", store, *args], capture_output=True, env=env(), timeout=60
    )


def pending(store: str) -> int:
    box = Outbox(store, [], env={})
    total = box.result("status")["pending"]["total"]
    box.close()
    return total


def bodies(out: bytes) -> List[dict]:
    return [json.loads(line) for line in out.decode().splitlines()]


def test_users_track_bodies_follow_the_combined_limit_and_empty_the_store(store_dir):
    fill(store_dir, events=60, attributes=60)
    run = flush(store_dir, "--format", "usersTrack")
    assert run.returncode == 0, run.stderr
    sent = bodies(run.stdout)
    assert [len(b.get("attributes", [])) + len(b.get("events", [])) for b in sent] == [75, 45]
    assert [a["k"] for b in sent for a in b.get("attributes", [])] == list(range(60))
    assert all(
        o["external_id"] == "u" for b in sent for o in b.get("attributes", []) + b.get("events", [])
    )
    assert b"2 lines, 120 objects" in run.stderr
    assert pending(store_dir) == 0
    again = flush(store_dir, "--format", "usersTrack")
    assert (again.returncode, again.stdout) == (0, b"")


def test_items_format_max_and_rounds(store_dir):
    fill(store_dir, events=25)
    first = flush(store_dir, "--max", "10")
    assert first.returncode == 0, first.stderr
    assert [i["name"] for i in bodies(first.stdout)] == [f"e{n}" for n in range(10)]
    assert b"15 still pending" in first.stderr
    rest = flush(store_dir)
    assert [i["name"] for i in bodies(rest.stdout)] == [f"e{n}" for n in range(10, 25)]
    assert pending(store_dir) == 0


def test_items_without_an_identifier_become_dead_letters_unless_a_default_user_is_given(store_dir):
    fill(store_dir, events=1, anonymous=2)
    run = flush(store_dir, "--format", "usersTrack")
    assert run.returncode == 0, run.stderr
    assert [e["name"] for b in bodies(run.stdout) for e in b["events"]] == ["e0"]
    assert b"2 without an identifier" in run.stderr
    box = Outbox(store_dir, [], env={})
    assert len(box.result("listDeadLetters")["deadLetters"]) == 2
    assert box.result("requeueDeadLetters")["requeued"] == 2
    box.close()
    named = flush(
        store_dir, "--format", "usersTrack", "--default-user", '{"externalId":"fallback"}'
    )
    assert [e["external_id"] for b in bodies(named.stdout) for e in b["events"]] == [
        "fallback",
        "fallback",
    ]


def test_a_closed_stdout_keeps_every_item(store_dir):
    fill(store_dir, events=30_000)
    reader = subprocess.Popen(
        [binary(), "flush", "--store", store_dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    assert reader.stdout and reader.stderr
    reader.stdout.read(100)
    reader.stdout.close()  # the consumer dies after 100 bytes
    error = reader.stderr.read()
    assert reader.wait(timeout=60) == 1, error
    assert b"stdout closed" in error
    written = re.search(rb"(\d+) lines", error)
    assert written is not None
    # Rounds already written in full were acked; the round being written when the pipe closed is kept.
    assert pending(store_dir) == 30_000 - int(written.group(1))
    assert pending(store_dir) >= 30_000 - 20_000


def test_lease_mode_keeps_the_items_until_acked(store_dir):
    fill(store_dir, events=3)
    run = flush(store_dir, "--lease", "60000")
    assert run.returncode == 0, run.stderr
    assert len(bodies(run.stdout)) == 3
    match = re.search(rb"flushId (\S+) until", run.stderr)
    assert match is not None, run.stderr
    box = Outbox(store_dir, [], env={})
    status = box.result("status")
    assert status["pending"]["total"] == 3
    assert box.result("flushPending")["items"] == []  # leased: not handed out again
    assert box.result("ackFlush", {"flushId": match.group(1).decode()}) == {"acked": 3}
    box.close()
    assert pending(store_dir) == 0


def test_lease_mode_hands_out_one_lease_of_at_most_max_items(store_dir):
    fill(store_dir, events=5)
    run = flush(store_dir, "--lease", "60000", "--max", "2")
    assert [i["name"] for i in bodies(run.stdout)] == ["e0", "e1"]
    assert b"3 still pending" in run.stderr
    rest = flush(store_dir)  # the leased two are hidden; the other three are flushed
    assert [i["name"] for i in bodies(rest.stdout)] == ["e2", "e3", "e4"]


def test_usage_errors_exit_2(store_dir):
    for args in (
        ["--format", "xml"],
        ["--max", "0"],
        ["--lease"],
        ["--default-user", "{"],
        ["--default-user", '{"nope":1}'],
    ):
        run = flush(store_dir, *args)
        assert run.returncode == 2, (args, run.stderr)
        assert run.stdout == b"", args


def summary_counts(stderr: bytes) -> tuple:
    found = re.search(
        rb"left in the store: (\d+) still pending, (\d+) leased, (\d+) dead letters", stderr
    )
    assert found, stderr
    return tuple(int(n) for n in found.groups())


def status_counts(store: str) -> tuple:
    box = Outbox(store, [], env={})
    status = box.result("status")
    dead = len(box.result("listDeadLetters", {"max": 100000})["deadLetters"])
    leased = sum(
        len(lease.get("ids", [])) or lease.get("items", 0)
        for lease in status.get("leases", []) or []
    )
    box.close()
    return status["pending"]["total"], dead, leased


def test_the_summary_names_pending_leased_and_dead_as_the_store_holds_them(tmp_path):
    store = str(tmp_path / "store")
    fill(store, events=30, anonymous=2)
    box = Outbox(store, [], env={})
    assert len(box.result("flushPending", {"leaseMs": 600000, "max": 10})["items"]) == 10
    assert box.close() == 0
    done = flush(store, "--max", "5")
    assert done.returncode == 0, done.stderr
    # 32 saved, 10 in a live lease, 5 written and removed.
    assert summary_counts(done.stderr) == (17, 10, 0), done.stderr
    done = flush(store, "--format", "usersTrack")
    assert done.returncode == 0, done.stderr
    pending, leased, dead = summary_counts(done.stderr)
    # The other 15 events written and removed, the 2 without a user dead-lettered on the way.
    assert (pending, leased, dead) == (0, 10, 2), done.stderr
    total, listed_dead, _ = status_counts(store)
    assert total == pending + leased and listed_dead == dead


def test_the_summary_after_a_closed_stdout_agrees_with_status(tmp_path):
    store = str(tmp_path / "store")
    fill(store, events=20000)
    with subprocess.Popen(
        [binary(), "flush", "--store", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    ) as proc:
        assert proc.stdout and proc.stderr
        proc.stdout.readline()
        proc.stdout.close()  # the reader goes away after one line
        err = proc.stderr.read()
        proc.wait(timeout=60)
    pending, leased, dead = summary_counts(err)
    total, listed_dead, _ = status_counts(store)
    assert (pending + leased, dead) == (total, listed_dead), err
