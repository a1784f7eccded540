"""What `flushPending {format: "usersTrack"}` does with items that have no identifier, in the
contract and in the binary: they are listed in `skipped` and become dead letters (`no_identifier`),
they do not stay pending (Sources/OutboxServer/Methods/FlushPending.swift, Protocol/delivery.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

HERE = Path(__file__).resolve().parent
PROTOCOL = HERE.parent
sys.path.insert(0, str(HERE))
import replay  # noqa: E402  (Protocol/tests/replay.py, standard library only)

DOC = json.loads((PROTOCOL / "openrpc.json").read_text(encoding="utf-8"))


def flush_pending_description() -> str:
    (method,) = [m for m in DOC["methods"] if m["name"] == "flushPending"]
    return " ".join(method["description"].split())


def test_the_contract_says_skipped_items_become_dead_letters() -> None:
    text = flush_pending_description()
    assert "stay pending and are listed in `skipped`" not in text
    assert "dead letters (reason `no_identifier`" in text and "`skipped`" in text


def session(requests: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    try:
        binary = replay.find_binary()
    except Exception:  # noqa: BLE001
        pytest.skip("push-outbox binary not built")
    lines = "".join(
        json.dumps({"jsonrpc": "2.0", "id": n, **r}) + "\n" for n, r in enumerate(requests, 1)
    )
    done = subprocess.run(
        [str(binary), *replay.BASE_ARGS],
        input=lines.encode(),
        capture_output=True,
        check=True,
        timeout=30,
    )
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_the_binary_dead_letters_items_with_no_identifier() -> None:
    replies = session(
        [
            {"method": "saveCustomEvent", "params": {"name": "anonymous"}},
            {"method": "saveCustomEvent", "params": {"name": "named", "user": {"externalId": "u"}}},
            {"method": "flushPending", "params": {"format": "usersTrack"}},
            {"method": "status", "params": {}},
            {"method": "listDeadLetters", "params": {}},
        ]
    )
    anonymous = replies[0]["result"]["id"]
    flushed, status, dead = (r["result"] for r in replies[2:])
    assert flushed["skipped"] == [{"id": anonymous, "reason": "no_identifier"}]
    assert flushed["remaining"] == 0
    assert status["pending"]["total"] == 0 and status["deadLetters"] == 1
    assert json.dumps(dead).count(anonymous) == 1 and "no_identifier" in json.dumps(dead)
