"""importLegacy under failing storage (a file-size limit: EFBIG): its reply waits for the journal
commit like a save's, so an import whose records cannot be written is answered -32003 as a whole
and none of its items exist after a restart, while every id an earlier import answered survives."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest


def request(n: int, method: str, params: dict[str, Any]) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"
    ).encode()


def lists(n: int) -> dict[str, Any]:
    """One import of 10 events (about 300 bytes each, strings under 255 characters) and one attribute."""
    events = [{"event_name": f"e{n}_{k}", "blob": "x" * 250} for k in range(10)]
    return {"pending_custom_events": events, "pending_custom_attributes": [{f"a{n}": n}]}


@pytest.mark.timeout(60)
def test_an_import_that_cannot_be_journaled_is_refused_whole(
    outbox_bin: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    limit = 24 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    proc = subprocess.Popen(
        [
            str(outbox_bin),
            "--store",
            str(store),
            "--fsync",
            "always",
            "--snapshot-interval",
            "3600",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=small_files,
    )
    assert proc.stdin is not None and proc.stdout is not None
    acked: list[str] = []
    refused = None
    try:
        for n in range(1, 200):
            proc.stdin.write(request(n, "importLegacy", lists(n)))
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
            assert reply["id"] == n
            if "error" in reply:
                refused = reply
                break
            assert reply["result"]["saved"] == 11
            acked += [i for r in reply["result"]["results"] for i in r["ids"]]
        assert refused is not None, "storage never failed: the limit is too large for the test"
        assert refused["error"]["code"] == -32003
        assert refused["error"]["data"]["reason"] == "storage_unavailable"
        assert len(acked) >= 11, "the limit was hit before anything was imported"
    finally:
        proc.kill()
        proc.wait(timeout=30)
    # A fresh server without the limit: exactly the acknowledged items, none of the refused import.
    done = subprocess.run(
        [str(outbox_bin), "--store", str(store)],
        input=request(1, "flushPending", {}),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    items = json.loads(done.stdout.decode().splitlines()[0])["result"]["items"]
    assert [i["id"] for i in items] == acked
