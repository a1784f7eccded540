"""kill -9 rounds on a store that already holds a large backlog (issue 8: the kill -9 suite gains
rounds with a 1M-item backlog).

The backlog is built once per session by a pipelined generator. Each round copies it, starts the
binary, streams pipelined saves (single, batch, notification, repeated client ids), kills it at a
random moment, restarts and checks: every acknowledged save is there exactly once with its id and
seq, every backlog item is there exactly once with its seq, nothing is invented.

Environment: FAULT_SKIP_BACKLOG=1 skips these (quick local runs; CI runs them);
FAULT_BACKLOG_ITEMS (default 1000000) and FAULT_BACKLOG_ROUNDS (default 2) size them.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import Ledger, Outbox, check_invariants, copy_store, report
from test_kill_during_load import Loader, kill_and_collect

SEED = 31337
ITEMS = int(os.environ.get("FAULT_BACKLOG_ITEMS", "1000000"))
ROUNDS = int(os.environ.get("FAULT_BACKLOG_ROUNDS", "2"))
CHUNK = 100_000

pytestmark = pytest.mark.skipif(os.environ.get("FAULT_SKIP_BACKLOG") == "1", reason="FAULT_SKIP_BACKLOG=1")


def backlog_line(n: int) -> bytes:
    return (
        f'{{"jsonrpc":"2.0","id":{n},"method":"saveCustomEvent","params":{{"name":"backlog","properties":'
        f'{{"n":{n},"s":"item {n}"}},"user":{{"externalId":"b{n}"}}}}}}\n'
    ).encode()


@pytest.fixture(scope="session")
def backlog(outbox_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding ITEMS saves (seq n+1 for backlog item n), written through the real binary by
    a pipelined generator, then closed cleanly."""
    store = tmp_path_factory.mktemp("backlog") / "store"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    proc = subprocess.Popen(
        [str(outbox_bin), "--store", str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )

    def generate() -> None:
        for start in range(0, ITEMS, 10_000):
            proc.stdin.write(b"".join(backlog_line(n) for n in range(start, min(start + 10_000, ITEMS))))
        proc.stdin.close()

    writer = threading.Thread(target=generate, daemon=True)
    writer.start()
    replies = errors = 0
    last = b""
    tail = b""
    while chunk := proc.stdout.read(1 << 20):
        replies += chunk.count(b"\n")
        errors += chunk.count(b'"error"')
        tail = (tail + chunk)[-400:]
    writer.join()
    rc = proc.wait(600)
    stderr = proc.stderr.read()
    assert rc == 0 and errors == 0 and replies == ITEMS, (rc, errors, replies, stderr[-1000:])
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    assert json.loads(last)["result"]["seq"] == ITEMS, last
    return store


def drain_and_check(binary: Path, store: Path, ledger: Ledger) -> tuple[int, list[str], dict]:
    """Drains everything in chunks, checking backlog items on the fly (exactly once, same seq) and
    collecting the others for the ledger check."""
    ob = Outbox(binary, store)
    seen = bytearray(ITEMS)
    others: list[dict] = []
    problems: list[str] = []
    try:
        status = ob.result("status", timeout=120)
        while True:
            res = ob.result("flushPending", {"max": CHUNK}, timeout=300)
            for item in res["items"]:
                ext = item.get("user", {}).get("externalId", "")
                if item.get("name") == "backlog" and ext.startswith("b"):
                    n = int(ext[1:])
                    if seen[n]:
                        problems.append(f"backlog item {n} twice")
                    seen[n] = 1
                    if item["seq"] != n + 1 or item["properties"] != {"n": n, "s": f"item {n}"}:
                        problems.append(f"backlog item {n} changed: {item}")
                else:
                    others.append(item)
            ob.by_id.clear()
            ob.lines.clear()
            if res["remaining"] == 0:
                break
        ob.close(timeout=120, expect=0)
    finally:
        ob.ensure_dead()
    missing = ITEMS - sum(seen)
    if missing:
        problems.append(f"{missing} backlog items missing")
    lost, why = check_invariants(others, ledger)
    return lost, problems + why, status


@pytest.mark.timeout(1800)
def test_kill9_rounds_on_a_large_backlog(outbox_bin: Path, backlog: Path, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    total_acked = total_lost = 0
    problems: list[str] = []
    for r in range(ROUNDS):
        store = copy_store(backlog, tmp_path / "store")
        ledger = Ledger()
        fsync = ["everysec", "always", "never"][r % 3]
        ob = Outbox(outbox_bin, store, fsync=fsync, snapshot_interval="0.2")
        loader = Loader(ob, ledger, seed=SEED + r, first_n=10_000_000 * (r + 1))
        try:
            status = ob.result("status", timeout=120)
            assert status["pending"]["total"] == ITEMS, status["pending"]
            loader.start()
            time.sleep(rng.uniform(0.3, 2.0))
            kill_and_collect(ob, loader, ledger)
        finally:
            loader.stop.set()
            ob.ensure_dead()
        assert not ledger.errors, f"round {r}: saves answered with errors: {ledger.errors[:3]}"
        lost, round_problems, status = drain_and_check(outbox_bin, store, ledger)
        bad = [w for w in status["recovery"] if w.get("code") in ("recoveredWithLoss", "checkpointCorrupt")]
        assert not bad, f"round {r}: a kill -9 must never damage the store: {bad}"
        assert status["pending"]["total"] >= ITEMS + len(ledger.acked), status["pending"]
        total_acked += len(ledger.acked)
        total_lost += lost
        problems += [f"round {r} ({fsync}): {p}" for p in round_problems]
    report(f"fault: backlog={ITEMS} rounds={ROUNDS} acknowledged={total_acked} lost={total_lost}")
    assert total_acked > 100, "the load hardly ran: the test proves nothing"
    assert total_lost == 0 and not problems, "\n".join(problems[:30])
