"""Timeouts, server death, startup failures and graceful close (real binary unless noted)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pytest
from conftest import run, server_env, write_script
from push_outbox import AsyncOutbox, CallTimeout, Outbox, ServerExited, StoreLocked

pytestmark = pytest.mark.timeout(60)


# --- timeouts (a stand-in that reads stdin and never answers) ----------------------------------


@pytest.fixture
def never_replies(tmp_path: Path) -> str:
    # Reads (discards) stdin in the background and never writes to stdout.
    return write_script(tmp_path, "never-replies", "cat >/dev/null &\nexec sleep 30\n")


def test_call_timeout_sync(never_replies: str) -> None:
    with Outbox.spawn(binary=never_replies, timeout=0.5, close_timeout=0.5) as ob:
        t0 = time.monotonic()
        with pytest.raises(CallTimeout) as info:
            ob.status()
        elapsed = time.monotonic() - t0
        assert 0.4 <= elapsed < 3
        assert isinstance(info.value, TimeoutError)
        assert info.value.method == "status" and info.value.timeout == 0.5
        # per-call override
        t0 = time.monotonic()
        with pytest.raises(CallTimeout):
            ob.save_custom_event("e", timeout=0.1)
        assert time.monotonic() - t0 < 0.5
    # close() escalated: stdin EOF did not stop `sleep`, SIGTERM did
    assert ob.returncode == -signal.SIGTERM


def test_call_timeout_async(never_replies: str) -> None:
    async def main() -> None:
        async with AsyncOutbox.spawn(binary=never_replies, timeout=0.5, close_timeout=0.5) as ob:
            t0 = time.monotonic()
            results = await asyncio.gather(
                ob.status(), ob.save_custom_event("e", timeout=0.2), return_exceptions=True
            )
            assert all(isinstance(r, CallTimeout) for r in results), results
            assert time.monotonic() - t0 < 3
        assert ob.returncode == -signal.SIGTERM

    run(main())


# --- server death ------------------------------------------------------------------------------


def test_kill_9_with_pending_call_sync(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(args=["--log-level", "debug"])
    assert ob.status()["pending"]["total"] == 0
    os.kill(ob.pid, signal.SIGSTOP)  # make sure the next call is still pending when we kill
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(ob.save_custom_event, "never_answered")
        time.sleep(0.3)
        assert not fut.done()
        os.kill(ob.pid, signal.SIGKILL)
        with pytest.raises(ServerExited) as info:
            fut.result(timeout=10)
    err = info.value
    assert err.returncode == -signal.SIGKILL
    assert err.signal == signal.SIGKILL
    assert isinstance(err.stderr_tail, str)
    assert err.stderr_tail == ob.stderr_tail
    assert len(err.stderr_tail.encode()) <= 64 * 1024
    # every later call fails fast the same way
    with pytest.raises(ServerExited):
        ob.status()
    assert ob.close() == -signal.SIGKILL


def test_kill_9_with_pending_calls_async(aspawn: Callable[..., AsyncOutbox]) -> None:
    async def main() -> None:
        async with aspawn() as ob:
            await ob.status()
            os.kill(ob.pid, signal.SIGSTOP)
            tasks = [asyncio.ensure_future(ob.save_custom_event(f"e{i}")) for i in range(10)]
            await asyncio.sleep(0.3)
            assert not any(t.done() for t in tasks)
            os.kill(ob.pid, signal.SIGKILL)
            results = await asyncio.gather(*tasks, return_exceptions=True)
            assert all(isinstance(r, ServerExited) for r in results), results
            assert all(r.returncode == -signal.SIGKILL for r in results)  # type: ignore[union-attr]
            with pytest.raises(ServerExited):
                await ob.status()
        assert ob.returncode == -signal.SIGKILL

    run(main())


def test_usage_error_exits_2_with_stderr(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(args=["--no-such-flag"])
    with pytest.raises(ServerExited) as info:
        ob.status()
    assert info.value.returncode == 2
    assert info.value.stderr_tail.strip() != ""
    assert "\n" not in info.value.stderr_tail.strip(), "spec: one line on stderr"


def test_bad_flag_value_exits_2(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(args=["--fsync", "sometimes"])
    with pytest.raises(ServerExited) as info:
        ob.status()
    assert info.value.returncode == 2


def test_store_locked_by_another_process_exits_3(
    spawn: Callable[..., Outbox], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    first = spawn(store=store)
    assert first.status()["store"] is not None
    second = spawn(store=store)
    with pytest.raises(ServerExited) as info:
        second.status()
    assert info.value.returncode == 3
    assert info.value.stderr_tail.strip() != ""
    # If the server also announces it on stdout (an id-null error), it is -32005.
    assert info.value.server_error is None or isinstance(info.value.server_error, StoreLocked)
    # the first one is unaffected
    assert first.save_custom_event("still_works")["pending"] == 1


def test_version_and_help_exit_0(binary: str) -> None:
    import subprocess

    for flag in ("--version", "--help"):
        proc = subprocess.run([binary, flag], capture_output=True, env=server_env(), timeout=10)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip()


# --- graceful close ----------------------------------------------------------------------------


def test_graceful_close_exit_0(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    ob.save_custom_event("e")
    t0 = time.monotonic()
    assert ob.close() == 0
    assert time.monotonic() - t0 < 4, "server should exit promptly at stdin EOF"
    assert ob.returncode == 0
    assert ob.close() == 0  # idempotent


def test_context_manager_exit_0(binary: str) -> None:
    with Outbox.spawn(memory=True, binary=binary, env=server_env()) as ob:
        ob.status()
    assert ob.returncode == 0
    assert ob.closed


def test_async_context_manager_exit_0(binary: str) -> None:
    async def main() -> None:
        async with AsyncOutbox.spawn(memory=True, binary=binary, env=server_env()) as ob:
            await ob.status()
        assert ob.returncode == 0
        ob2 = await AsyncOutbox.spawn(memory=True, binary=binary, env=server_env())
        await ob2.status()
        assert await ob2.close() == 0
        assert await ob2.close() == 0

    run(main())


def test_sigterm_is_a_clean_exit(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    ob.status()
    os.kill(ob.pid, signal.SIGTERM)
    with pytest.raises(ServerExited) as info:
        # the call may race the exit; either way the process must end with 0
        for _ in range(50):
            ob.status()
            time.sleep(0.05)
    assert info.value.returncode == 0


def test_close_with_durable_store_then_reopen(spawn: Callable[..., Outbox], tmp_path: Path) -> None:
    store = tmp_path / "s"
    ob = spawn(store=store, args=["--fsync", "always"])
    for i in range(5):
        ob.save_custom_event(f"e{i}")
    assert ob.close() == 0
    ob2 = spawn(store=store)
    assert ob2.status()["pending"]["total"] == 5
