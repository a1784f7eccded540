"""A server that refuses to start: the client raises its start-up notice as a typed
:class:`StartupError` (:class:`StoreLocked` for a locked store), writes nothing to stderr by itself,
and ``env=`` replaces the server's environment (real binary)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
from conftest import SRC, run, server_env
from push_outbox import (
    AsyncOutbox,
    Outbox,
    ServerError,
    ServerExited,
    StartupError,
    StartupFailed,
    StoreLocked,
)

pytestmark = pytest.mark.timeout(60)


def test_a_locked_store_raises_store_locked_on_the_first_call(
    spawn: Callable[..., Outbox], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    first = spawn(store=store)
    assert first.status()["store"] is not None
    second = spawn(store=store)
    with pytest.raises(StoreLocked) as info:
        second.status()
    locked = info.value
    # a start-up error, a server error with the notice's code and data, and a ServerExited
    assert isinstance(locked, StartupError) and isinstance(locked, ServerError)
    assert isinstance(locked, ServerExited) and locked.server_error is locked
    assert locked.code == -32005 and locked.data["reason"] == "store_locked"
    assert locked.data["pid"] == str(first.pid)
    assert locked.returncode == 3
    assert locked.stderr_tail.strip() != ""
    assert "exit status 3" in str(locked)
    # every later call raises it again, a fresh copy each time
    with pytest.raises(StoreLocked) as again:
        second.save_custom_event("x")
    assert again.value is not locked and again.value.returncode == 3
    assert first.save_custom_event("still_works")["pending"] == 1


def test_a_locked_store_raises_store_locked_asyncio(
    spawn: Callable[..., Outbox], aspawn: Callable[..., AsyncOutbox], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    first = spawn(store=store)
    first.status()

    async def main() -> None:
        async with aspawn(store=store) as second:
            with pytest.raises(StoreLocked) as info:
                await second.status()
        assert info.value.returncode == 3 and info.value.data["pid"] == str(first.pid)

    run(main())


def test_a_bad_flag_raises_startup_failed(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(args=["--fsync", "sometimes"])
    with pytest.raises(StartupFailed) as info:
        ob.status()
    assert info.value.data["reason"] == "usage" and info.value.returncode == 2
    assert isinstance(info.value, ServerExited)


CLIENT_ALONE = """
import sys
from push_outbox import Outbox, StoreLocked
binary, store = sys.argv[1], sys.argv[2]
with Outbox.spawn(store=store, binary=binary, timeout=15) as first:
    first.status()
    with Outbox.spawn(store=store, binary=binary, timeout=15) as second:
        try:
            second.status()
        except StoreLocked as locked:
            print(locked.returncode)
"""


def test_the_client_writes_nothing_to_stderr_by_itself(binary: str, tmp_path: Path) -> None:
    """A program that configures no logging and meets a locked store (which the client logs as a
    warning) gets nothing on its stderr from the client."""
    env = server_env()
    env["PYTHONPATH"] = str(SRC)
    done = subprocess.run(
        [sys.executable, "-c", CLIENT_ALONE, binary, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"
    assert done.stderr == "", f"the client wrote to stderr:\n{done.stderr}"


def test_env_replaces_the_servers_environment(
    spawn: Callable[..., Outbox], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In this process's environment: a store and a flag value the server refuses at start-up.
    monkeypatch.setenv("PUSH_OUTBOX_STORE", str(tmp_path / "inherited"))
    monkeypatch.setenv("PUSH_OUTBOX_FSYNC", "sometimes")
    inherited = spawn(env=None, store=None, memory=False)
    with pytest.raises(StartupFailed):
        inherited.status()  # env=None inherits both
    # env= is the whole environment: neither variable reaches the server
    replaced = spawn(
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)},
        store=tmp_path / "given",
    )
    status = replaced.status()
    assert json.dumps(status["store"]).find("given") >= 0, status["store"]
    assert not (tmp_path / "inherited").exists()
