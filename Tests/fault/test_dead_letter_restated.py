"""A dead letter (or a requeue) journaled in a later segment than its item survives a kill -9 and
then a clean restart (found by the model checker, seed 100): the first restart's final snapshot
dropped the later segment, which alone held the dead state, without rewriting the item's own
segment, so from the next start the refused item was pending again and would be sent to Braze."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import checkpoint_bytes, find_binary, segment_name


def binary() -> str:
    path = find_binary()  # the suite's one lookup (conftest)
    if path is None:
        pytest.skip("push-outbox is not built")
    return str(path)


def clean_env() -> Dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}


def line(n: int, method: str, params: Dict[str, Any]) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"
    ).encode()


def run(store: Path, lines: List[bytes]) -> List[Dict[str, Any]]:
    done = subprocess.run(
        [binary(), "--store", str(store)],
        input=b"".join(lines),
        capture_output=True,
        env=clean_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(reply) for reply in done.stdout.splitlines()]


def state(store: Path) -> Dict[str, Any]:
    dead, status = run(store, [line(1, "listDeadLetters", {}), line(2, "status", {})])
    return {
        "dead": sorted(d["item"]["name"] for d in dead["result"]["deadLetters"]),
        "pending": status["result"]["pending"]["total"],
    }


@pytest.mark.parametrize("requeue", [False, True])
def test_a_state_journaled_after_its_item_survives_kill_9_and_a_clean_restart(
    tmp_path: Path, requeue: bool
) -> None:
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [binary(), "--store", str(store), "--snapshot-interval", "0.05"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
    )
    assert proc.stdin and proc.stdout

    def call(n: int, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        proc.stdin.write(line(n, method, params))  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        return json.loads(proc.stdout.readline())  # type: ignore[union-attr]

    assert "result" in call(1, "saveCustomEvent", {"name": "anon"})  # no identifier
    assert "result" in call(2, "saveCustomEvent", {"name": "kept", "user": {"externalId": "u"}})
    time.sleep(0.4)  # snapshots: the items' segment is closed, a new one is open
    flushed = call(3, "flushPending", {"format": "usersTrack", "leaseMs": 600000})
    assert flushed["result"]["skipped"], flushed  # "anon" became a no_identifier dead letter
    if requeue:
        time.sleep(0.4)
        assert call(4, "requeueDeadLetters", {})["result"]["requeued"] == 1
    proc.send_signal(signal.SIGKILL)  # right after the journal write, before any later snapshot
    proc.wait(timeout=30)
    first = state(store)  # a clean start and stop: its final snapshot settles the store
    second = state(store)  # nothing done in between: the same store
    assert first == second, (first, second)
    assert first == {"dead": [] if requeue else ["anon"], "pending": 2 if requeue else 1}


def test_a_checkpoint_that_holds_nothing_reopens_after_its_empty_segments_are_gone(
    tmp_path: Path,
) -> None:
    """Found by the FuzzRecovery smoke: a checkpoint counting no items and listing no segment, but with
    firstSeq < nextSeq, opened while unlisted empty segments were there; the clean close removed them
    and left the checkpoint as it was, and the next start refused ("no segment holds seqs 1–1, where
    the oldest held item was") although nothing was ever held."""
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    header = (
        b'{"format":"push-outbox-checkpoint","version":2,"createdAt":"2026-01-01T00:00:00.000Z",'
        b'"coversSeq":1,"nextSeq":2,"firstSeq":1,"items":0,"segments":[],"leases":[],"finished":[]}'
    )
    (store / "checkpoint.json").write_bytes(checkpoint_bytes(header))
    for first in (1, 3):
        (store / segment_name(first)).write_bytes(b"POUTJRNL" + bytes([2, 0, 0, 0, 0, 0, 0, 0]))
    for path in store.iterdir():
        path.chmod(0o600)
    assert state(store) == {"dead": [], "pending": 0}
    assert state(store) == {"dead": [], "pending": 0}  # the second start used to be refused
