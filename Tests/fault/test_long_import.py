"""A large importLegacy is a long call (Protocol/README.md, "Long calls"): it imports a chunk per
loop turn, a status sent behind it is answered first, and each chunk is committed before the reply
names it. Under failing storage (a file-size limit: EFBIG) the chunks that could not be journaled
are answered -32003 element by element, and after a restart the store holds exactly the ids the
reply named: nothing lost, nothing extra."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest

COUNT = 5000  # over ImportLegacy.longCallElements (2000): a long call


def request(n: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": method}
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


def events() -> dict[str, Any]:
    return {
        "pending_custom_events": [{"event_name": f"e{k}", "blob": "x" * 200} for k in range(COUNT)]
    }


def stored_ids(outbox_bin: Path, store: Path) -> list[str]:
    done = subprocess.run(
        [str(outbox_bin), "--store", str(store)],
        input=request(1, "flushPending", {"max": 100000}),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    return [i["id"] for i in json.loads(done.stdout.decode().splitlines()[0])["result"]["items"]]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("limit", [None, 400 * 1024])
def test_a_large_import_answers_later_requests_first_and_names_only_durable_items(
    outbox_bin: Path, tmp_path: Path, limit: int | None
) -> None:
    store = tmp_path / "store"

    def small_files() -> None:
        if limit is not None:
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
    try:
        proc.stdin.write(request("import", "importLegacy", events()) + request("status", "status"))
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        second = json.loads(proc.stdout.readline())
        assert [first["id"], second["id"]] == ["status", "import"], (
            "the import held the status back"
        )
        result = second["result"]
        assert len(result["results"]) == COUNT
        named = [i for r in result["results"] for i in r.get("ids", [])]
        refused = [r for r in result["results"] if "error" in r]
        assert result["saved"] == len(named) == COUNT - len(refused)
        if limit is None:
            assert not refused
        else:
            assert refused, "storage never failed: the limit is too large for the test"
            assert named, "the limit was hit before anything was imported"
            assert {r["error"]["data"]["reason"] for r in refused} == {"storage_unavailable"}
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert sorted(stored_ids(outbox_bin, store)) == sorted(named)
