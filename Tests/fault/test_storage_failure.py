"""Failing storage: a file-size limit (ulimit -f -> EFBIG) and a full tmpfs (ENOSPC).

Saves that cannot be journaled are answered -32003 storage_unavailable and are not stored; every
save acknowledged before stays intact; flushes and status keep working; saves succeed again once
the storage recovers; the process never dies (SIGXFSZ is ignored)."""

from __future__ import annotations

import json
import random
import resource
import subprocess
from pathlib import Path

import pytest

from conftest import Ledger, Outbox, check_invariants, file_size_limit, fill, flush_all, make_save, mount_tmpfs, unmount

SEED = 707


def load_until_refused(ob: Outbox, ledger: Ledger, rng: random.Random, first_n: int, limit: int = 2000) -> tuple[int, list[int]]:
    """Pipelined bursts of 8 saves (one line each, sent together) until a burst is refused.
    Returns the next n and the ns that were refused."""
    n = first_n
    refused: list[int] = []
    while n < first_n + limit:
        burst = [ledger.record(k, k, *make_save(rng, k)) for k in range(n, n + 8)]
        assert ob.send(*burst), f"process gone: rc={ob.proc.poll()} stderr={ob.stderr[-500:]!r}"
        responses = ob.wait_ids(range(n, n + 8))
        n += 8
        ledger.absorb(responses)
        refused = [r["id"] for r in responses if "error" in r]
        if refused:
            break
    assert refused, "storage never failed: the limit is too large for the test"
    return n, refused


def check_refusals(ledger: Ledger, refused_ns: list[int]) -> None:
    for err in ledger.errors:
        e = err["error"]
        assert e["code"] == -32003, err
        assert isinstance(e.get("data"), dict) and e["data"].get("reason") == "storage_unavailable", err
    assert {e["id"] for e in ledger.errors} >= set(refused_ns)
    # Group commit: the refused burst is refused as a whole; nothing of it is acknowledged.
    assert not set(refused_ns) & set(ledger.acked), "a save of the failed burst was acknowledged"


def while_failing(ob: Outbox, ledger: Ledger, rng: random.Random, n: int) -> tuple[int, set[int]]:
    """Storage is failing: more saves are refused, but status, lease/release and drains work.
    Returns the next n and the ns of items handed out by a drain (they may or may not come back)."""
    # A burst bigger than any space left in the file's last page / under the limit.
    more = [ledger.record(k, k, *make_save(rng, k)) for k in range(n, n + 20)]
    ob.send(*more)
    responses = ob.wait_ids(range(n, n + 20))
    ledger.absorb(responses)
    assert all(r.get("error", {}).get("code") == -32003 for r in responses), responses
    n += 20

    status = ob.result("status")
    assert status["pending"]["total"] == len(ledger.acked), (status, len(ledger.acked))

    lease = ob.result("flushPending", {"leaseMs": 60000})
    leased = {item["id"] for item in lease["items"]}
    assert leased == {iid for iid, _ in ledger.acked.values()}, "the lease does not hold exactly the acknowledged saves"
    assert ob.result("releaseFlush", {"flushId": lease["flushId"]})["released"] == len(leased)

    drained = ob.result("flushPending", {"max": 2})["items"]
    assert len(drained) == min(2, len(leased))
    return n, {int(item["user"]["externalId"][1:]) for item in drained}


def verify_after_restart(binary: Path, store: Path, ledger: Ledger, drained: set[int]) -> None:
    flushed = flush_all(binary, store)
    # Drained items were handed out: whether they come back (the removal record could not be
    # written) is at-least-once redelivery, not loss.
    must = Ledger()
    must.sent = ledger.sent
    must.acked = {n: v for n, v in ledger.acked.items() if n not in drained}
    lost, problems = check_invariants(flushed.items, must)
    assert lost == 0 and not problems, "\n".join(problems)
    refused = {ledger.request_n[e["id"]] for e in ledger.errors}
    back = [it for it in flushed.items if int(it["user"]["externalId"][1:]) in refused]
    assert not back, f"saves answered -32003 were stored anyway: {back[:3]}"
    assert not flushed.warnings("recoveredWithLoss"), flushed.status["recovery"]


@pytest.mark.timeout(60)
def test_file_size_limit_refuses_saves_and_keeps_stored_items(outbox_bin: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    limit = 24 * 1024

    rng = random.Random(SEED)
    ledger = Ledger()
    ob = Outbox(outbox_bin, store, fsync="always", snapshot_interval=3600, preexec_fn=file_size_limit(limit))
    try:
        n, refused = load_until_refused(ob, ledger, rng, 0)
        assert len(ledger.acked) >= 8, "the limit was hit before anything was stored"
        journal_size = max(p.stat().st_size for p in store.glob("segment.*"))
        assert journal_size <= limit
        n, drained = while_failing(ob, ledger, rng, n)
        check_refusals(ledger, refused)
        assert ob.alive(), f"died under EFBIG: rc={ob.proc.poll()}"

        # Storage recovers: lift the limit on the running process; saves are accepted again.
        resource.prlimit(ob.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        errors_before = len(ledger.errors)
        again = [ledger.record(k, k, *make_save(rng, k)) for k in range(n, n + 5)]
        ob.send(*again)
        ledger.absorb(ob.wait_ids(range(n, n + 5)))
        assert len(ledger.errors) == errors_before, f"saves still refused after the limit was lifted: {ledger.errors[-3:]}"
        ob.kill9()
    finally:
        ob.ensure_dead()
    verify_after_restart(outbox_bin, store, ledger, drained)


@pytest.mark.timeout(60)
def test_file_size_limit_at_startup_and_clean_exit(outbox_bin: Path, tmp_path: Path) -> None:
    """Under the limit for the whole run, a clean EOF exit (whose final snapshot cannot be written)
    still exits without a signal, and the journal keeps every acknowledged save."""
    store = tmp_path / "store"
    limit = 16 * 1024

    rng = random.Random(SEED + 1)
    ledger = Ledger()
    ob = Outbox(outbox_bin, store, fsync="everysec", snapshot_interval="0.05", preexec_fn=file_size_limit(limit, hard=True))
    try:
        load_until_refused(ob, ledger, rng, 0)
        rc = ob.close()
        assert rc == 0, f"exit code {rc}: {ob.stderr[-1000:]!r}"
    finally:
        ob.ensure_dead()
    verify_after_restart(outbox_bin, store, ledger, set())


@pytest.mark.timeout(60)
def test_full_filesystem_refuses_saves_then_recovers(outbox_bin: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "tiny"
    why = mount_tmpfs(mnt, "256k")
    if why:
        pytest.skip(why)
    try:
        store = mnt / "store"
        junk = mnt / "junk"
        rng = random.Random(SEED + 2)
        ledger = Ledger()
        ob = Outbox(outbox_bin, store, fsync="always", snapshot_interval=3600)
        try:
            ob.result("status")  # store open: LOCK and journal exist
            fill(junk, leave_bytes=16 * 1024)
            n, refused = load_until_refused(ob, ledger, rng, 0)
            assert len(ledger.acked) >= 8, "the filesystem was full before anything was stored"
            fill(mnt / "junk2", leave_bytes=0)  # now completely full
            n, drained = while_failing(ob, ledger, rng, n)
            check_refusals(ledger, refused)
            assert any("No space" in e["error"]["data"].get("detail", "") or "ENOSPC" in e["error"]["data"].get("detail", "")
                       for e in ledger.errors), f"not ENOSPC? {ledger.errors[0]}"

            junk.unlink()  # space comes back
            (mnt / "junk2").unlink()
            errors_before = len(ledger.errors)
            again = [ledger.record(k, k, *make_save(rng, k)) for k in range(n, n + 5)]
            ob.send(*again)
            ledger.absorb(ob.wait_ids(range(n, n + 5)))
            assert len(ledger.errors) == errors_before, f"saves still refused after space came back: {ledger.errors[-3:]}"
            ob.kill9()
        finally:
            ob.ensure_dead()
        verify_after_restart(outbox_bin, store, ledger, drained)
    finally:
        unmount(mnt)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fsync", ["everysec", "always"])
def test_a_stream_refuses_exactly_the_saves_whose_write_failed(outbox_bin: Path, tmp_path: Path, fsync: str) -> None:
    """A stream piped in as fast as it is read: each burst's records are written on the second
    thread while the loop answers the next burst, and its replies wait for that write. Under a file
    size limit one of those writes fails mid-stream. Every reply comes, in order; each save is either
    acknowledged and back after a restart, or refused -32003 and never stored."""
    store = tmp_path / "store"
    count = 20_000
    rng = random.Random(SEED + 3)
    ledger = Ledger()
    lines = []
    for n in range(count):
        method, params = ledger.sent.setdefault(n, make_save(rng, n))
        ledger.request_n[n] = n
        lines.append(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}, ensure_ascii=False))
    source = tmp_path / "saves.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open(source, "rb") as inp:
        proc = subprocess.run([str(outbox_bin), "--store", str(store), "--fsync", fsync, "--snapshot-interval", "3600"],
                              stdin=inp, capture_output=True, timeout=100, preexec_fn=file_size_limit(2 << 20))
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == list(range(count)), "one reply per save, in order"
    ledger.absorb(replies)
    check_refusals(ledger, [])
    stderr = proc.stderr.decode(errors="replace")
    assert ledger.errors and len(ledger.acked) > 1000, (len(ledger.acked), len(ledger.errors), stderr[-800:])
    assert "written off the loop's thread" in stderr, "no write in flight failed: the test missed its path"
    verify_after_restart(outbox_bin, store, ledger, set())
