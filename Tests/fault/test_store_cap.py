"""`--max-store-bytes` (issue 19 item 5): a cap on the whole store directory that never drops anything.

A seeded load of pipelined saves (batches, notifications, repeated client ids) and drains runs
against a 1 MiB cap in several processes, each ended by EOF or kill -9, so the store sits at its cap
while snapshots rewrite and delete segments. A thread walks the directory (every regular file in it
and in quarantine/, by size) the whole time and keeps the peak. Then the store is drained and saved
to again.

Checked: every refusal is -32001 store_full naming max-store-bytes with max == the cap and
current <= the cap, and no other error occurs (no write failed); the peak never passes the cap;
every acknowledged save is accounted for against a plain model (acknowledged minus what answered
drains handed out; a drain unanswered at a kill may or may not have happened), nothing drained comes
back; after the drain, saves are accepted again.
"""

from __future__ import annotations

import os
import random
import stat
import threading
import time
from pathlib import Path

import pytest
from conftest import Ledger, Outbox, check_invariants, flush_all, make_save, report
from test_kill_during_load import Drainer, Loader

SEED = 20261125
CAP = 1 << 20


def dir_bytes(store: Path) -> int:
    total = 0
    for directory in (store, store / "quarantine"):
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            continue
        for name in names:
            try:
                info = os.lstat(directory / name)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total


class Sampler(threading.Thread):
    """Walks the store directory as often as it can and keeps the largest total seen."""

    def __init__(self, store: Path) -> None:
        super().__init__(daemon=True)
        self.store, self.peak, self.samples = store, 0, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, dir_bytes(self.store))
            self.samples += 1
            time.sleep(0.0005)


def uncertain_drain(ledger: Ledger, drained: set[str], drainer: Drainer) -> set[str]:
    """The items an unanswered drain may have taken: the oldest MAX acknowledged and not drained."""
    if not drainer.in_flight:
        return set()
    held = sorted((seq, iid) for iid, seq in ledger.acked.values() if iid not in drained)
    return {iid for _, iid in held[: Drainer.MAX]}


@pytest.mark.timeout(300)
def test_fill_to_the_cap_under_load_drain_and_save_again(outbox_bin: Path, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    store = tmp_path / "store"
    cap = ["--max-store-bytes", str(CAP)]
    ledger = Ledger()
    drained: set[str] = set()
    uncertain: set[str] = set()
    refusals = 0
    other_errors: list[dict] = []
    sampler = Sampler(store)
    sampler.start()
    next_n = 0
    try:
        for r in range(6):
            fsync = rng.choice(["always", "everysec", "never"])
            interval = rng.choice(["0.02", "0.1", "0.5"])
            ob = Outbox(outbox_bin, store, *cap, fsync=fsync, snapshot_interval=interval)
            loader = Loader(ob, ledger, seed=SEED + r, first_n=next_n, pause=0.001, drained=True)
            drainer = Drainer(ob, pause=rng.choice([0.01, 0.05, 0.2]))
            try:
                loader.start()
                time.sleep(rng.uniform(0.3, 0.8))  # fill first
                drainer.start()
                time.sleep(rng.uniform(0.5, 1.5))
                if rng.random() < 0.5:
                    ob.kill9()
                    ended = "kill -9"
                else:
                    loader.stop.set()
                    loader.join(10)
                    ob.close(timeout=60)
                    ended = "EOF"
            finally:
                loader.stop.set()
                drainer.stop.set()
                ob.ensure_dead()
            loader.join(10)
            drainer.join(10)
            next_n = loader.n
            assert not ob.bad_lines, f"unparsable stdout lines: {ob.bad_lines[:3]}"
            ledger.absorb_outbox(ob)
            drained |= drainer.drained
            uncertain |= uncertain_drain(ledger, drained, drainer) if ended == "kill -9" else set()
            for error in ledger.errors:
                data = error.get("error", {}).get("data", {})
                if data.get("reason") == "store_full" and data.get("limit") == "max-store-bytes":
                    refusals += 1
                    assert data["max"] == CAP and data["value"] == CAP, error
                    assert 0 <= data["current"] <= CAP, error
                else:
                    other_errors.append(error)
            ledger.errors.clear()
            report(
                f"store cap round {r} ({fsync}, interval {interval}, {ended}): peak {sampler.peak} of {CAP}"
            )

        # Drain everything, then save again.
        flushed = flush_all(outbox_bin, store, *cap)
        assert not flushed.recovery_codes, flushed.status["recovery"]
        assert flushed.status["maxStoreBytes"] == CAP
        assert 0 < flushed.status["storeBytes"] <= CAP
        ob = Outbox(outbox_bin, store, *cap)
        try:
            again = Ledger()
            batch = [
                again.record(f"a{k}", next_n + k, *make_save(rng, next_n + k)) for k in range(200)
            ]
            ob.send(batch)
            again.absorb(ob.wait_ids([f"a{k}" for k in range(200)], timeout=60))
            status = ob.result("status")
            ob.close(timeout=30)
        finally:
            ob.ensure_dead()
        assert not again.errors, f"saves after the drain refused: {again.errors[:3]}"
        assert status["health"] == "ok", status["problems"]
        after = flush_all(outbox_bin, store, *cap)
    finally:
        sampler.stop.set()
        sampler.join(10)

    expected = Ledger()
    expected.sent = ledger.sent
    expected.acked = {
        n: v for n, v in ledger.acked.items() if v[0] not in drained and v[0] not in uncertain
    }
    present = [it for it in flushed.items if it["id"] not in uncertain]
    lost, problems = check_invariants(present, expected)
    back = drained & {it["id"] for it in flushed.items}
    lost_again, problems_again = check_invariants(after.items, again)
    report(
        f"store cap: cap={CAP} peak={sampler.peak} samples={sampler.samples} acknowledged={len(ledger.acked)} "
        f"drained={len(drained)} refused_store_full={refusals} other_errors={len(other_errors)} lost={lost}"
    )
    assert not other_errors, f"a write failed or another error came back: {other_errors[:3]}"
    assert refusals > 0, "the load never reached the cap: the test proves nothing"
    assert sampler.peak <= CAP, (
        f"the store directory reached {sampler.peak} bytes, over the cap {CAP}"
    )
    assert lost == 0 and not problems, "\n".join(problems[:30])
    assert not back, f"{len(back)} drained items came back"
    assert lost_again == 0 and not problems_again, problems_again[:10]


def test_requeue_and_import_refused_at_the_cap(outbox_bin: Path, tmp_path: Path) -> None:
    """importLegacy (a dictionary whole or not at all) and requeueDeadLetters meet the same cap; the
    refusals change nothing; a drain frees the room and both then succeed."""
    store = tmp_path / "store"
    ob = Outbox(outbox_bin, store, "--max-store-bytes", str(256 << 10), snapshot_interval="0.05")
    try:
        # 150 dead letters: items with no user, flushed as /users/track bodies.
        for k in range(150):
            assert "result" in ob.call("saveCustomEvent", {"name": f"d{k}"})
        ob.result("flushPending", {"format": "usersTrack"})
        assert ob.result("status")["deadLetters"] == 150

        def fill(pad: str) -> int:
            saved = 0
            while True:
                reply = ob.call(
                    "saveCustomEvent",
                    {
                        "name": "e",
                        "properties": {f"p{k}": pad for k in range(8)},
                        "user": {"externalId": "u"},
                    },
                )
                if "error" in reply:
                    data = reply["error"]["data"]
                    assert data["reason"] == "store_full" and data["limit"] == "max-store-bytes", (
                        reply
                    )
                    assert data["max"] == 256 << 10 and data["current"] <= data["max"], reply
                    return saved
                saved += 1

        assert fill("x" * 250) > 0
        fill("")  # down to less than the smallest save
        before = ob.result("status")
        reply = ob.call("requeueDeadLetters", {})
        assert reply.get("error", {}).get("data", {}).get("limit") == "max-store-bytes", reply
        reply = ob.call(
            "importLegacy",
            {"pending_custom_attributes": [{"a": 1, "b": 2, "c": 3}], "user": {"externalId": "u"}},
        )
        (result,) = reply["result"]["results"]
        assert result["error"]["data"]["limit"] == "max-store-bytes", reply
        after = ob.result("status")
        assert (after["pending"], after["deadLetters"]) == (
            before["pending"],
            before["deadLetters"],
        )

        ob.result("flushPending", {})  # drains the pending items (dead letters stay)
        deadline = time.monotonic() + 20
        while ob.result("status")["storeBytes"] > 128 << 10 and time.monotonic() < deadline:
            time.sleep(0.05)  # the snapshot frees the room
        assert ob.result("requeueDeadLetters", {})["requeued"] == 150
        reply = ob.call(
            "importLegacy",
            {"pending_custom_attributes": [{"a": 1, "b": 2, "c": 3}], "user": {"externalId": "u"}},
        )
        assert len(reply["result"]["results"][0]["ids"]) == 3, reply
        ob.close(timeout=30)
    finally:
        ob.ensure_dead()
