"""How often the journal flushes under `--fsync everysec`: the segments closed during a second are
flushed together, in one background pass a second with the open segment and the directory, not
each one (and the directory again) as it closes.

The fsync-logging LD_PRELOAD shim (faults.py) records every fsync call with its time and path. A
stream of saves closes a segment about every quarter second for a few seconds; then every closed
segment must have been flushed (once closed, and perhaps once while open), and the calls on the store's segments and directory
must fall into no more passes than the seconds the stream took (plus the passes of the exit).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from conftest import Outbox, build_fsync_shim, fill_with_saves

ROUNDS = 12
PER_ROUND = 20_000  # about 4 MiB of journal: one segment closed each round
PASS_GAP_NS = 50_000_000  # calls closer than this belong to one pass


def flushes(log: Path, store: Path) -> list[tuple[int, str]]:
    """(monotonic ns, path) of every fsync call on the store's directory or one of its segments."""
    calls = []
    for line in log.read_text().splitlines():
        at, path = line.split(" ", 1)
        if path == str(store) or (Path(path).parent == store and Path(path).name.startswith("segment.")):
            calls.append((int(at), path))
    return sorted(calls)


def passes(calls: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    groups: list[list[tuple[int, str]]] = []
    for call in calls:
        if groups and call[0] - groups[-1][-1][0] < PASS_GAP_NS:
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


def test_everysec_flushes_the_segments_closed_in_a_second_in_one_pass(spawn, store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    shim = build_fsync_shim(tmp_path)
    log = tmp_path / "fsync.log"
    outbox: Outbox = spawn(
        store, fsync="everysec", snapshot_interval=3600, env={"LD_PRELOAD": str(shim), "FAULT_FSYNC_LOG": str(log)}
    )
    started = time.monotonic()
    for round_ in range(ROUNDS):
        fill_with_saves(outbox, PER_ROUND, first=1 + round_ * PER_ROUND)
        time.sleep(0.15)
    seconds = time.monotonic() - started
    outbox.close()

    segments = sorted(store.glob("segment.*"))
    closed = {str(path) for path in segments[:-1]}
    assert len(closed) >= ROUNDS - 2, f"only {len(closed)} segments closed"
    calls = flushes(log, store)
    per_segment = {path: sum(1 for _, p in calls if p == path) for path in closed}
    # once closed, and perhaps once before, while it was the open segment at a pass
    assert all(1 <= count <= 2 for count in per_segment.values()), per_segment
    groups = passes(calls)
    # one pass a second while the stream ran, then the exit: the last pass and the final snapshot's
    limit = math.ceil(seconds) + 3
    assert len(groups) <= limit, (
        f"{len(groups)} passes of flushes in {seconds:.1f} s (at most {limit}): "
        + "; ".join(f"{len(group)} calls" for group in groups)
    )
    directory_flushes = sum(1 for _, path in calls if path == str(store))
    assert directory_flushes <= limit, f"the directory was flushed {directory_flushes} times in {seconds:.1f} s"
