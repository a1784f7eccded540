"""CI's run of the model checker (about a minute, fixed seeds) over $PUSH_OUTBOX_BIN, which CI
points at the release binary. Fails on any divergence, and when the campaign did too little to
mean anything (no operations, restarts, kills or kills at named points, or a kind of operation
that never ran)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checker import campaign  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KINDS = {
    "save",
    "importLegacy",
    "drain",
    "lease",
    "deliverPending",
    "listDeadLetters",
    "requeueDeadLetters",
    "dropDeadLetters",
    "flush",
    "flush --lease",
    "deliver (command)",
    "server --deliver (process)",
}


def binary() -> str:
    found = os.environ.get("PUSH_OUTBOX_BIN") or str(ROOT / ".build" / "debug" / "push-outbox")
    if not Path(found).exists():
        pytest.skip(f"no binary at {found}")
    return found


@pytest.mark.parametrize("seed", [1, 5000])
def test_the_store_matches_a_plain_model_across_restarts_and_kills(seed: int) -> None:
    stats, divergence = campaign(binary(), seconds=30, seed=seed)
    print(
        f"seed {seed}: runs {stats.runs}, operations {stats.operations}, restarts {stats.restarts},"
        f" kills {stats.kills}, by kind {stats.ops}, answers {stats.answers}"
    )
    assert divergence is None, divergence
    assert stats.operations >= 100 and stats.restarts >= 5 and stats.kills >= 2, stats
    assert sum(stats.kill_points.values()) >= 1, stats
    assert KINDS <= set(stats.ops), f"never ran: {KINDS - set(stats.ops)}"
