"""importLegacy under failing storage (a file-size limit: EFBIG): its reply waits for the journal
commit like a save's, so an import whose records cannot be written is answered -32003 as a whole
and none of its items exist after a restart, while every id an earlier import answered survives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import Outbox, file_size_limit, flush_all


def lists(n: int) -> dict[str, Any]:
    """One import of 10 events (about 300 bytes each, strings under 255 characters) and one attribute."""
    events = [{"event_name": f"e{n}_{k}", "blob": "x" * 250} for k in range(10)]
    return {"pending_custom_events": events, "pending_custom_attributes": [{f"a{n}": n}]}


@pytest.mark.timeout(60)
def test_an_import_that_cannot_be_journaled_is_refused_whole(
    outbox_bin: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    ob = Outbox(
        outbox_bin,
        store,
        fsync="always",
        snapshot_interval=3600,
        preexec_fn=file_size_limit(24 * 1024),
    )
    acked: list[str] = []
    refused = None
    try:
        for n in range(1, 200):
            reply = ob.call("importLegacy", lists(n))
            if "error" in reply:
                refused = reply
                break
            assert reply["result"]["saved"] == 11
            acked += [i for r in reply["result"]["results"] for i in r["ids"]]
        assert refused is not None, "storage never failed: the limit is too large for the test"
        assert refused["error"]["code"] == -32003
        assert refused["error"]["data"]["reason"] == "storage_unavailable"
        assert len(acked) >= 11, "the limit was hit before anything was imported"
        ob.kill9()
    finally:
        ob.ensure_dead()
    # A fresh server without the limit: exactly the acknowledged items, none of the refused import.
    assert [i["id"] for i in flush_all(outbox_bin, store).items] == acked
