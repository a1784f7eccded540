"""A large importLegacy is a long call (Protocol/README.md, "Long calls"): it imports a chunk per
loop turn, a status sent behind it is answered first, and each chunk is committed before the reply
names it. Under failing storage (a file-size limit: EFBIG) the chunks that could not be journaled
are answered -32003 element by element, and after a restart the store holds exactly the ids the
reply named: nothing lost, nothing extra."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import Outbox, file_size_limit, flush_all

COUNT = 5000  # over ImportLegacy.longCallElements (2000): a long call


def events() -> dict[str, Any]:
    return {
        "pending_custom_events": [{"event_name": f"e{k}", "blob": "x" * 200} for k in range(COUNT)]
    }


@pytest.mark.timeout(120)
@pytest.mark.parametrize("limit", [None, 400 * 1024])
def test_a_large_import_answers_later_requests_first_and_names_only_durable_items(
    outbox_bin: Path, tmp_path: Path, limit: int | None
) -> None:
    store = tmp_path / "store"
    ob = Outbox(
        outbox_bin, store, fsync="always", snapshot_interval=3600, preexec_fn=file_size_limit(limit)
    )
    try:
        ob.send(
            {"jsonrpc": "2.0", "id": "import", "method": "importLegacy", "params": events()},
            {"jsonrpc": "2.0", "id": "status", "method": "status"},
        )
        ob.wait_ids(["import", "status"], timeout=90)
        assert [line["id"] for line in ob.lines[:2]] == ["status", "import"], (
            "the import held the status back"
        )
        result = ob.by_id["import"]["result"]
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
        ob.kill9()
    finally:
        ob.ensure_dead()
    assert sorted(i["id"] for i in flush_all(outbox_bin, store).items) == sorted(named)
