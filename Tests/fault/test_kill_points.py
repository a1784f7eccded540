"""The snapshot's durability order, step by step: the binary kills itself (PUSH_OUTBOX_KILL_AT) at
each named point of its file work, between each pair of steps (journal flushed, checkpoint temp
written, renamed, directory flushed, each rewrite, each unlink and its directory flush, the end of
the snapshot, a new segment), while saves stream in and drains empty the oldest segments.

After every kill: each acknowledged save is back exactly once with its values (a plain model: the
ledger of acknowledged saves minus what answered drains handed out), nothing a drain handed out
comes back, no recoveredWithLoss, no temp file left. Every point must be reached at least once.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from conftest import Ledger, Outbox, build_segmented_store, check_invariants, copy_store, flush_all, report
from test_kill_during_load import Drainer, Loader, expected_after_drains

SEED = 20261124
# KillPoint.swift's names, in the order a snapshot reaches them (rotation: the journal's new segment).
POINTS = [
    "barrier",
    "temp",
    "renamed",
    "checkpoint",
    "rewrite",
    "deletion",
    "deletionSynced",
    "compacted",
    "rotation",
]


@pytest.mark.timeout(400)
def test_kill_at_every_named_point(outbox_bin: Path, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    base = tmp_path / "base"
    ledger = build_segmented_store(outbox_bin, base, rng)
    reached: dict[str, int] = {}
    problems: list[str] = []
    total_acked = total_lost = 0
    for i, point in enumerate(POINTS * 2):
        visit = 1 if i < len(POINTS) else rng.randint(2, 4)
        store = copy_store(base, tmp_path / f"k{i}")
        round_ledger = Ledger()
        round_ledger.sent.update(ledger.sent)
        round_ledger.acked.update(ledger.acked)
        fsync = rng.choice(["always", "everysec"])
        ob = Outbox(
            outbox_bin,
            store,
            fsync=fsync,
            snapshot_interval="0.01",
            env={"PUSH_OUTBOX_KILL_AT": f"{point}:{visit}"},
        )
        loader = Loader(ob, round_ledger, seed=SEED + i, first_n=100_000 * (i + 1), pause=0.002, drained=True)
        drainer = Drainer(ob, pause=0.02)
        try:
            loader.start()
            drainer.start()
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and ob.alive():
                time.sleep(0.01)
            if ob.alive():
                ob.kill9()  # the point was not reached in time: an ordinary kill -9
            else:
                rc = ob.proc.wait()
                assert rc == -signal.SIGKILL, (
                    f"{point}:{visit}: exit {rc}, stderr={ob.stderr[-2000:]!r}"
                )
                reached[point] = reached.get(point, 0) + 1
                ob.join()
            loader.stop.set()
            loader.join(10)
            assert not ob.bad_lines, f"unparsable stdout lines: {ob.bad_lines[:3]}"
            round_ledger.absorb_outbox(ob)
        finally:
            loader.stop.set()
            drainer.stop.set()
            ob.ensure_dead()
        drainer.join(10)
        assert not round_ledger.errors, (
            f"{point}: saves answered with errors: {round_ledger.errors[:3]}"
        )

        flushed = flush_all(outbox_bin, store)
        bad = flushed.warnings("recoveredWithLoss") + flushed.warnings("checkpointCorrupt")
        assert not bad, f"{point}:{visit}: a kill must never damage the store: {bad}"
        leftovers = [name for name in os.listdir(store) if ".tmp." in name]
        assert not leftovers, f"{point}:{visit}: temp files were not cleaned up: {leftovers}"
        back = drainer.drained & {it["id"] for it in flushed.items}
        assert not back, (
            f"{point}:{visit}: {len(back)} items handed out by an answered drain came back"
        )
        lost, round_problems = check_invariants(
            flushed.items, expected_after_drains(round_ledger, drainer)
        )
        total_acked += len(round_ledger.acked)
        total_lost += lost
        problems += [f"{point}:{visit} ({fsync}): {p}" for p in round_problems]

    report(
        "fault: kill points reached="
        + ",".join(f"{p}x{reached.get(p, 0)}" for p in POINTS)
        + f" acknowledged={total_acked} lost={total_lost}"
    )
    assert total_lost == 0, "acknowledged saves lost:\n" + "\n".join(problems[:30])
    assert not problems, "\n".join(problems[:30])
    missing = [p for p in POINTS if p not in reached]
    assert not missing, f"kill points never reached: {missing}"
