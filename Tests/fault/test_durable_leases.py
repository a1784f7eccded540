"""Durable leases (issue 8, section 7): a lease taken in one process is acked by the next one, after a
clean exit or kill -9; an unacked lease comes back after its expiry, across restarts, with
deliveryCount + 1; a shell pipeline can lease and ack in separate invocations."""

from __future__ import annotations

import json
import random
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import Ledger, Outbox, check_invariants, flush_all, make_save, run_once

SEED = 909


def saved_store(ob: Outbox, ledger: Ledger, count: int) -> None:
    rng = random.Random(SEED)
    ob.send(*[ledger.record(n, n, *make_save(rng, n)) for n in range(count)])
    ledger.absorb(ob.wait_ids(range(count)))
    assert not ledger.errors, ledger.errors


def end(ob: Outbox, how: str) -> None:
    if how == "kill":
        ob.kill9()
    else:
        ob.close(expect=0)


def minus(ledger: Ledger, ids: set[str]) -> Ledger:
    out = Ledger()
    out.sent = ledger.sent
    out.acked = {n: v for n, v in ledger.acked.items() if v[0] not in ids}
    return out


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["eof", "kill"])
@pytest.mark.parametrize("interval", ["3600", "0.05"])
def test_lease_taken_in_one_process_is_acked_by_the_next(outbox_bin: Path, spawn, tmp_path: Path, how: str, interval: str) -> None:
    store = tmp_path / "store"
    ledger = Ledger()
    ob = spawn(store, fsync="always", snapshot_interval=interval)
    saved_store(ob, ledger, 8)
    lease = ob.result("flushPending", {"leaseMs": 600000, "max": 5})
    leased = {it["id"] for it in lease["items"]}
    assert len(leased) == 5
    if interval != "3600":
        time.sleep(0.2)  # let a checkpoint be written while the lease is live
    end(ob, how)

    ob2 = spawn(store, snapshot_interval=interval)
    status = ob2.result("status")
    assert status["lease"] is not None and status["lease"]["flushId"] == lease["flushId"], status["lease"]
    assert status["lease"]["count"] == 5, status["lease"]
    assert status["pending"]["total"] == 8, status
    again = ob2.result("flushPending", {"leaseMs": 600000})
    assert again["flushId"] == lease["flushId"] and {it["id"] for it in again["items"]} == leased, again
    assert ob2.result("ackFlush", {"flushId": lease["flushId"]})["acked"] == 5
    ob2.kill9()

    flushed = flush_all(outbox_bin, store)
    assert not leased & {it["id"] for it in flushed.items}, "acked items came back"
    lost, problems = check_invariants(flushed.items, minus(ledger, leased))
    assert lost == 0 and not problems and len(flushed.items) == 3, "\n".join(problems)


def parse_time(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["eof", "kill"])
def test_expired_lease_comes_back_across_a_restart_with_one_more_delivery(outbox_bin: Path, spawn, tmp_path: Path, how: str) -> None:
    store = tmp_path / "store"
    ledger = Ledger()
    ob = spawn(store, fsync="always", snapshot_interval="0.05")
    saved_store(ob, ledger, 6)
    lease = ob.result("flushPending", {"leaseMs": 3000, "max": 4})
    leased = {it["id"]: it["deliveryCount"] for it in lease["items"]}
    end(ob, how)

    # Before expiry the next process still honours the lease.
    # (Checked only with time to spare before the expiry, so a slow machine skips the check.)
    expiry = parse_time(lease["leaseExpiresAt"])
    ob2 = spawn(store)
    if time.time() < expiry - 1.5:
        status = ob2.result("status")
        again = ob2.result("flushPending", {"leaseMs": 60000})
        if time.time() < expiry - 0.05:
            assert status["lease"] and status["lease"]["flushId"] == lease["flushId"], status
            assert again.get("flushId") == lease["flushId"], "a second lease while the first is live"
    ob2.close(expect=0)

    wait = parse_time(lease["leaseExpiresAt"]) - time.time() + 0.2
    if wait > 0:
        time.sleep(wait)
    seen = {}

    def check(ob3: Outbox) -> None:
        seen["ack"] = ob3.call("ackFlush", {"flushId": lease["flushId"]})

    flushed = flush_all(outbox_bin, store, check=check)
    assert flushed.status["lease"] is None, flushed.status
    assert seen["ack"].get("error", {}).get("code") == -32004, f"ack of an expired lease: {seen['ack']}"
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems and len(flushed.items) == 6, "\n".join(problems)
    counts = {it["id"]: it["deliveryCount"] for it in flushed.items}
    for iid, before in leased.items():
        assert counts[iid] == before + 1, f"{iid}: deliveryCount {counts[iid]}, leased at {before}"
    assert all(counts[i] == 0 for i in counts if i not in leased)


def one_shot(binary: Path, store: Path, *messages: dict) -> list[dict]:
    text = "".join(json.dumps(m) + "\n" for m in messages).encode()
    proc = run_once(binary, store, input=text)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.timeout(60)
def test_shell_pipeline_saves_leases_and_acks_in_separate_invocations(outbox_bin: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    saves = [
        {"jsonrpc": "2.0", "id": n, "method": "saveCustomEvent", "params": {"name": "e", "properties": {"n": n}, "user": {"externalId": f"u{n}"}}}
        for n in range(5)
    ]
    saved = one_shot(outbox_bin, store, *saves)
    assert all("result" in r for r in saved), saved
    (leased,) = one_shot(outbox_bin, store, {"jsonrpc": "2.0", "id": 1, "method": "flushPending", "params": {"leaseMs": 600000, "max": 3}})
    lease = leased["result"]
    assert len(lease["items"]) == 3 and lease["remaining"] == 2
    # ... the caller delivers lease["items"] (curl), then acks in a third invocation:
    (acked,) = one_shot(outbox_bin, store, {"jsonrpc": "2.0", "id": 1, "method": "ackFlush", "params": {"flushId": lease["flushId"]}})
    assert acked.get("result") == {"acked": 3}, acked
    (status,) = one_shot(outbox_bin, store, {"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}})
    assert status["result"]["pending"]["total"] == 2 and status["result"]["lease"] is None, status
    flushed = flush_all(outbox_bin, store)
    assert sorted(it["properties"]["n"] for it in flushed.items) == [3, 4]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["eof", "kill"])
def test_lease_survives_compaction_of_its_segment(outbox_bin: Path, spawn, tmp_path: Path, how: str) -> None:
    """The leased items' segment is rewritten (the other items in it were drained) and checkpoints
    are written while the lease is live; the next process still acks it, and nothing else is lost."""
    from conftest import files_containing, poll

    store = tmp_path / "store"
    ledger = Ledger()
    ob = spawn(store, fsync="always", snapshot_interval="0.05")
    saved_store(ob, ledger, 12)
    lease = ob.result("flushPending", {"leaseMs": 600000, "max": 4})
    leased = {it["id"] for it in lease["items"]}
    drained = {it["id"] for it in ob.result("flushPending", {"max": 5})["items"]}
    assert len(drained) == 5 and not drained & leased
    # Wait (bounded) until the drained items are out of every file: the segment was rewritten.
    drained_ns = {n for n, (iid, _) in ledger.acked.items() if iid in drained}
    probes = [f'"n{n}"'.encode() for n in drained_ns]
    assert poll(lambda: not any(files_containing(store, p) for p in probes), 20), "the segment was never compacted"
    end(ob, how)

    ob2 = spawn(store)
    assert ob2.result("ackFlush", {"flushId": lease["flushId"]})["acked"] == 4
    ob2.close(expect=0)
    flushed = flush_all(outbox_bin, store)
    lost, problems = check_invariants(flushed.items, minus(ledger, leased | drained))
    assert lost == 0 and not problems and len(flushed.items) == 3, "\n".join(problems)
