"""One writer per store (a second process exits 3 fast, touching nothing), and leases across kill -9
(durable: more in test_durable_leases.py)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Ledger, Outbox, check_invariants, error_lines, flush_all, make_save, tree

SEED = 808


def save_some(ob: Outbox, ledger: Ledger, rng: random.Random, ns: range) -> None:
    ob.send(*[ledger.record(n, n, *make_save(rng, n)) for n in ns])
    ledger.absorb(ob.wait_ids(ns))
    assert not ledger.errors, ledger.errors


@pytest.mark.timeout(30)
@pytest.mark.parametrize("stdin", ["open", "request"])
def test_second_process_on_the_same_store_exits_3_fast(outbox_bin: Path, tmp_path: Path, stdin: str) -> None:
    store = tmp_path / "store"
    rng = random.Random(SEED)
    ledger = Ledger()
    first = Outbox(outbox_bin, store, fsync="always", snapshot_interval=3600)
    try:
        save_some(first, ledger, rng, range(0, 10))
        before = tree(store)
        assert before["LOCK"].strip() == str(first.pid).encode()

        env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        started = time.monotonic()
        second = subprocess.Popen(
            [str(outbox_bin), "--store", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            if stdin == "request":
                second.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"intruder"}}\n')
                second.stdin.flush()
            # stdin stays open: the second process must not wait for the lock or for input.
            rc = second.wait(timeout=5)
            elapsed = time.monotonic() - started
            out, err = second.stdout.read(), second.stderr.read()
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
            for stream in (second.stdin, second.stdout, second.stderr):
                stream.close()
        assert rc == 3, (rc, out, err)
        assert elapsed < 2.0, f"took {elapsed:.2f}s to give up"
        err_lines = [line for line in err.decode().splitlines() if line.strip()]
        assert len(err_lines) == 1, f"expected one stderr line: {err!r}"
        assert str(first.pid) in err_lines[0], f"stderr does not name pid {first.pid}: {err_lines[0]!r}"
        lines = error_lines(out)
        assert len(lines) == 1, f"expected one stdout line: {out!r}"
        response = lines[0]
        assert response.get("jsonrpc") == "2.0" and "id" in response and response["id"] is None, response
        assert response["error"]["code"] == -32005, response
        assert str(first.pid) in json.dumps(response["error"].get("data")), response

        assert tree(store) == before, "the second process changed the store"
        # The first keeps serving.
        assert first.alive()
        save_some(first, ledger, rng, range(10, 15))
        assert first.result("status")["pending"]["total"] == 15
        first.close(expect=0)
    finally:
        first.ensure_dead()

    flushed = flush_all(outbox_bin, store)
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems, "\n".join(problems)
    assert len(flushed.items) == 15
    assert not flushed.status["recovery"], flushed.status["recovery"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("interval", ["3600", "0.02"])
def test_lease_survives_kill9_and_its_release_counts_a_delivery(outbox_bin: Path, tmp_path: Path, interval: str) -> None:
    store = tmp_path / "store"
    rng = random.Random(SEED + 1)
    ledger = Ledger()
    ob = Outbox(outbox_bin, store, fsync="everysec", snapshot_interval=interval)
    try:
        save_some(ob, ledger, rng, range(0, 8))
        lease = ob.result("flushPending", {"leaseMs": 600000, "max": 5})
        leased = {(it["id"], it["seq"]) for it in lease["items"]}
        assert len(leased) == 5 and lease["remaining"] == 3
        assert ob.result("status")["lease"]["count"] == 5
        time.sleep(0.15)  # with the short interval, a snapshot is taken while the lease is live
        ob.kill9()
    finally:
        ob.ensure_dead()

    seen: dict = {}

    def check(ob2: Outbox) -> None:
        seen["status"] = ob2.result("status")
        # Leases are durable: after a crash the lease is still live, and releasing it hands its
        # items back with one more delivery.
        seen["release"] = ob2.call("releaseFlush", {"flushId": lease["flushId"]})

    flushed = flush_all(outbox_bin, store, check=check)
    assert seen["status"]["lease"] and seen["status"]["lease"]["flushId"] == lease["flushId"], seen["status"]
    assert seen["status"]["lease"]["count"] == 5, seen["status"]
    assert seen["status"]["pending"]["total"] == 8
    assert seen["release"].get("result") == {"released": 5}, seen["release"]
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems, "\n".join(problems)
    assert leased <= {(it["id"], it["seq"]) for it in flushed.items}, "leased items did not come back with the same ids"
    assert len(flushed.items) == 8
    counts = {(it["id"], it["seq"]): it["deliveryCount"] for it in flushed.items}
    assert all(counts[k] == (1 if k in leased else 0) for k in counts), counts



@pytest.mark.timeout(30)
def test_acknowledged_lease_stays_removed_after_kill9(outbox_bin: Path, tmp_path: Path) -> None:
    """ackFlush is journaled before it is answered: after kill -9 the acked items do not come back,
    and the rest is intact."""
    store = tmp_path / "store"
    rng = random.Random(SEED + 2)
    ledger = Ledger()
    ob = Outbox(outbox_bin, store, fsync="always", snapshot_interval=3600)
    try:
        save_some(ob, ledger, rng, range(0, 8))
        lease = ob.result("flushPending", {"leaseMs": 600000, "max": 3})
        assert ob.result("ackFlush", {"flushId": lease["flushId"]})["acked"] == 3
        ob.kill9()
    finally:
        ob.ensure_dead()
    flushed = flush_all(outbox_bin, store)
    gone = {it["id"] for it in lease["items"]}
    assert not gone & {it["id"] for it in flushed.items}, "acknowledged flush items came back"
    expected = Ledger()
    expected.sent = ledger.sent
    expected.acked = {n: v for n, v in ledger.acked.items() if v[0] not in gone}
    lost, problems = check_invariants(flushed.items, expected)
    assert lost == 0 and not problems and len(flushed.items) == 5, "\n".join(problems)
