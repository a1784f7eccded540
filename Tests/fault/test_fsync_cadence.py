"""How often the journal flushes under `--fsync everysec`: the segments closed during a second are
flushed together, in one background pass a second with the open segment and the directory, not
each one (and the directory again) as it closes. Where `syncfs` reports write-back failures (Linux
5.8 or later), a pass with two files or more is one `syncfs` of the store's filesystem, so a stream
that closes several segments a second still makes a few flush calls a second; a failed `syncfs`
falls back to a flush of each file, and so does a pass while the system holds much dirty page
cache of other programs (a `syncfs` would write it out too). The shim sets that figure
($FAULT_MEMINFO).

The LD_PRELOAD shim (faults.py) records every fsync and syncfs call with its time and path. A
stream of saves closes a segment about every quarter second for a few seconds; then every segment
must have been flushed after its last write (by an fsync on it or a syncfs of the store's
filesystem), and the calls must fall into no more passes than the seconds the stream took (plus
the passes of the exit).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest
from conftest import Outbox, build_fsync_shim, fill_with_saves

ROUNDS = 12
PER_ROUND = 20_000  # about 4 MiB of journal: one segment closed each round
PASS_GAP_NS = 50_000_000  # calls closer than this belong to one pass
SYNCFS = "syncfs "


def syncfs_reports_failures() -> bool:
    """The server flushes a pass of several files with one syncfs only on Linux 5.8 or later."""
    numbers = [int(part) for part in os.uname().release.replace("-", ".").split(".")[:2] if part.isdigit()]
    return os.uname().sysname == "Linux" and len(numbers) == 2 and tuple(numbers) >= (5, 8)


def flushes(log: Path, store: Path) -> list[tuple[int, str]]:
    """(wall-clock ns, what) of every flush of the store: an fsync on its directory or one of its
    segments (the path), or a syncfs given one of its files ("syncfs " and the path)."""
    calls = []
    for line in log.read_text().splitlines():
        at, what = line.split(" ", 1)
        path = what.removeprefix(SYNCFS)
        if what.startswith(SYNCFS) and Path(path).parent == store:
            calls.append((int(at), what))
        elif path == str(store) or (Path(path).parent == store and Path(path).name.startswith("segment.")):
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


def unflushed(segments: list[Path], calls: list[tuple[int, str]]) -> list[str]:
    """The segments with no flush after their last write: no fsync on the file and no syncfs at or
    after its modification time."""
    missing = []
    for segment in segments:
        written = segment.stat().st_mtime_ns
        if not any(at >= written and (what == str(segment) or what.startswith(SYNCFS)) for at, what in calls):
            missing.append(segment.name)
    return missing


def stream(
    spawn, store: Path, tmp_path: Path, env: dict[str, str], dirty_kb: int = 0  # noqa: ANN001
) -> tuple[list[tuple[int, str]], float]:
    """Runs the stream of saves with the shim logging, the system seeming to hold `dirty_kb` of
    dirty page cache; returns the store's flush calls and the seconds the stream took."""
    log = tmp_path / "fsync.log"
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       24576000 kB\nDirty:          {dirty_kb:>8} kB\nWriteback:             0 kB\n")
    env = {
        "LD_PRELOAD": str(build_fsync_shim(tmp_path)),
        "FAULT_FSYNC_LOG": str(log),
        "FAULT_MEMINFO": str(meminfo),
        **env,
    }
    outbox: Outbox = spawn(store, fsync="everysec", snapshot_interval=3600, env=env)
    started = time.monotonic()
    for round_ in range(ROUNDS):
        fill_with_saves(outbox, PER_ROUND, first=1 + round_ * PER_ROUND)
        time.sleep(0.15)
    seconds = time.monotonic() - started
    outbox.close()
    return flushes(log, store), seconds


def test_everysec_flushes_the_segments_closed_in_a_second_in_one_pass(spawn, store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    calls, seconds = stream(spawn, store, tmp_path, {})
    segments = sorted(store.glob("segment.*"))
    assert len(segments) >= ROUNDS - 1, f"only {len(segments)} segments"
    assert unflushed(segments, calls) == []
    # an fsync on a segment: once closed, and perhaps once before, while it was the open segment at a pass
    per_segment = {path.name: sum(1 for _, what in calls if what == str(path)) for path in segments}
    assert all(count <= 2 for count in per_segment.values()), per_segment
    groups = passes(calls)
    # one pass a second while the stream ran, then the exit: the last pass and the final snapshot's
    limit = math.ceil(seconds) + 3
    assert len(groups) <= limit, (
        f"{len(groups)} passes of flushes in {seconds:.1f} s (at most {limit}): "
        + "; ".join(f"{len(group)} calls" for group in groups)
    )
    directory_flushes = sum(1 for _, what in calls if what == str(store))
    assert directory_flushes <= limit, f"the directory was flushed {directory_flushes} times in {seconds:.1f} s"
    if syncfs_reports_failures():
        # a few calls a pass, however many segments closed: 2 for a pass of one file (it and the
        # directory), 1 syncfs for more, and the exit's checkpoint its directory
        assert sum(1 for _, what in calls if what.startswith(SYNCFS)) >= 1, calls
        assert len(calls) <= 2 * limit, (
            f"{len(calls)} flush calls for {len(segments)} segments in {seconds:.1f} s (at most {2 * limit}): "
            + "; ".join(f"{len(group)} calls" for group in groups)
        )


def test_with_much_unwritten_data_of_others_a_pass_flushes_each_file(spawn, store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    """A syncfs would also write out (and wait for) every other program's dirty data on the
    filesystem: while the system holds much of it, a pass flushes each of its files instead."""
    calls, _ = stream(spawn, store, tmp_path, {}, dirty_kb=460_056)
    segments = sorted(store.glob("segment.*"))
    assert len(segments) >= ROUNDS - 1, f"only {len(segments)} segments"
    assert [what for _, what in calls if what.startswith(SYNCFS)] == []
    assert unflushed(segments, calls) == []


def test_a_failed_syncfs_falls_back_to_a_flush_of_each_file(spawn, store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    """A syncfs that fails (say, for a write-back failure of another file on the filesystem) proves
    nothing of the store's files: each is flushed after it."""
    if not syncfs_reports_failures():
        pytest.skip("the server uses syncfs only on Linux 5.8 or later")
    control = tmp_path / "fail-syncfs"
    control.write_text("")
    calls, _ = stream(spawn, store, tmp_path, {"FAULT_SYNCFS_CONTROL": str(control)})
    segments = sorted(store.glob("segment.*"))
    assert any(what.startswith(SYNCFS) for _, what in calls), "no syncfs was tried"
    without_syncfs = [(at, what) for at, what in calls if not what.startswith(SYNCFS)]
    assert unflushed(segments, without_syncfs) == []
