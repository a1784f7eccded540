"""status.health is "failing" while the journal's background fsync fails (--fsync everysec, the
fsync-failing LD_PRELOAD shim), and "ok" again once a snapshot succeeds after fsync works again.
(The write-failure side, EFBIG, is in Tests/ops/test_health.py.)"""

from __future__ import annotations

import time
from pathlib import Path

from conftest import Outbox, build_fsync_shim


def wait_health(ob: Outbox, state: str, seconds: float = 15.0) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        status = ob.result("status")
        if status["health"] == state or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def test_background_fsync_failure_is_failing_then_ok(outbox_bin: Path, tmp_path: Path) -> None:
    shim = build_fsync_shim(tmp_path)
    control = tmp_path / "fail-fsync"
    env = {"LD_PRELOAD": str(shim), "FAULT_FSYNC_CONTROL": str(control)}
    ob = Outbox(outbox_bin, tmp_path / "store", fsync="everysec", snapshot_interval="0.2", env=env)
    try:
        ob.result("saveCustomEvent", {"name": "a", "user": {"externalId": "u"}})
        assert wait_health(ob, "ok")["health"] == "ok"
        control.write_text("")
        ob.result(
            "saveCustomEvent", {"name": "b", "user": {"externalId": "u"}}
        )  # the next background fsync fails
        status = wait_health(ob, "failing")
        assert status["health"] == "failing", status["problems"]
        (problem,) = status["problems"]
        assert problem["reason"] == "journal_failing" and "fsync" in problem["detail"], problem
        control.unlink()
        status = wait_health(ob, "ok")
        assert status["health"] == "ok" and status["problems"] == [], status["problems"]
        ob.close(timeout=30)
    finally:
        ob.ensure_dead()
