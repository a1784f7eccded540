"""Page cache: a store does not keep its journal in the kernel's cache while it serves.

The open segment is written out and dropped from the page cache every 512 KiB as it grows (under
everysec; under always its writes are already flushed), a closed segment once it is on disk (written
back as it closes under everysec, after its fsync under always), and a start that loads the segments
drops each once it is read: the cache does not grow with the store (2 GB for 10M items), where each
new cache page costs a machine whose memory is backed lazily about as much as a save. Checked with
util-linux's fincore; Linux only, and not on tmpfs (its pages are the file).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import fill_with_saves, run_once

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="posix_fadvise and fincore are Linux's"),
    pytest.mark.skipif(shutil.which("fincore") is None, reason="fincore (util-linux) not found"),
]

SEGMENT_BYTES = 4 << 20  # Journal.segmentLimit
STEP_BYTES = 512 << 10  # Journal.writeBackStep


def resident(path: Path) -> int:
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)], capture_output=True, text=True
    )
    return int(out.stdout.strip() or 0)


def segments(store: Path) -> list[Path]:
    return sorted(store.glob("segment.*"))


def on_tmpfs(path: Path) -> bool:
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return out.stdout.strip() == "tmpfs"


def settled(paths: list[Path], most: int) -> dict[str, int]:
    """Each file's resident bytes, once none holds more than `most` (or after 10 s): the write-outs
    and drops run on the journal's fsync queue, in the background."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(resident(p) > most for p in paths):
        time.sleep(0.1)
    return {p.name: resident(p) for p in paths}


@pytest.mark.parametrize("fsync", ["everysec", "always"])
def test_the_open_segment_leaves_the_cache_as_it_grows(spawn, store: Path, fsync: str) -> None:  # noqa: ANN001
    # short of a rotation and with no snapshot (one drops segments too, which would hide a missing
    # drop): only the open segment's steps can take its pages out of the cache
    outbox = spawn(store, fsync=fsync, snapshot_interval=3600)
    if on_tmpfs(store.parent):
        pytest.skip("the store is on tmpfs")
    fill_with_saves(outbox, 13_000)  # about 3.6 MB of journal (about 280 bytes a record)
    (open_segment,) = segments(store)
    assert open_segment.stat().st_size >= 3 << 20
    # left: the bytes since the last step, and perhaps a large folio across a step's boundary
    most = 2 * STEP_BYTES
    assert {k: v for k, v in settled([open_segment], most).items() if v > most} == {}
    outbox.close()


@pytest.mark.parametrize("fsync", ["everysec", "always"])
def test_closed_segments_leave_the_cache(spawn, store: Path, fsync: str) -> None:  # noqa: ANN001
    # everysec drops a segment as it closes (written back first), always in the flush after it; no
    # snapshot meanwhile (one drops them too, which would hide a missing drop)
    outbox = spawn(store, fsync=fsync, snapshot_interval=3600)
    if on_tmpfs(store.parent):
        pytest.skip("the store is on tmpfs")
    fill_with_saves(outbox, 30_000)  # about 8 MB: two segments closed
    closed = segments(store)[:-1]
    assert sum(p.stat().st_size for p in closed) >= SEGMENT_BYTES
    assert {k: v for k, v in settled(closed, 8192).items() if v > 8192} == {}
    outbox.close()


def test_a_start_leaves_the_segments_out_of_the_cache(spawn, outbox_bin: Path, store: Path) -> None:  # noqa: ANN001
    outbox = spawn(store, fsync="everysec")
    if on_tmpfs(store.parent):
        pytest.skip("the store is on tmpfs")
    fill_with_saves(outbox, 30_000)
    outbox.close()
    for path in segments(store):
        path.read_bytes()  # in the cache now
    assert sum(resident(p) for p in segments(store)) >= SEGMENT_BYTES
    status = run_once(outbox_bin, store, input=b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
    assert status.returncode == 0
    assert json.loads(status.stdout)["result"]["pending"]["total"] == 30_000
    assert {p.name: resident(p) for p in segments(store)} == {p.name: 0 for p in segments(store)}
