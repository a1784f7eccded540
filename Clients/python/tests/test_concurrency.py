"""Pipelining and concurrency against the real binary."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import pytest
from conftest import run
from push_outbox import AsyncOutbox, Outbox

pytestmark = pytest.mark.timeout(120)


def test_1000_concurrent_async_saves(aspawn: Callable[..., AsyncOutbox]) -> None:
    n = 1000

    async def main() -> None:
        async with aspawn(timeout=60) as ob:
            results = await asyncio.gather(
                *(
                    ob.save_custom_event(
                        "concurrent", properties={"i": i}, user={"externalId": f"u{i % 7}"}
                    )
                    for i in range(n)
                )
            )
            ids = [r["id"] for r in results]
            seqs = [r["seq"] for r in results]
            assert len(set(ids)) == n
            assert len(set(seqs)) == n
            assert sorted(r["pending"] for r in results) == list(range(1, n + 1))
            status = await ob.status()
            assert status["pending"]["total"] == n
            assert status["pending"]["customEvent"] == n
            # one reply much larger than asyncio's 64 KiB default line limit
            flushed = await ob.flush_pending(max=n)
            assert flushed["remaining"] == 0
            assert len(json.dumps(flushed)) > 64 * 1024
            assert {i["id"] for i in flushed["items"]} == set(ids)
            assert sorted(i["properties"]["i"] for i in flushed["items"]) == list(range(n))
            assert (await ob.status())["pending"]["total"] == 0

    run(main())


def test_mixed_concurrent_async_calls(aspawn: Callable[..., AsyncOutbox]) -> None:
    async def main() -> None:
        async with aspawn() as ob:
            coros = []
            for i in range(200):
                coros.append(ob.save_custom_event(f"e{i}"))
                coros.append(ob.status())
                coros.append(ob.call("noSuchMethod"))
            results = await asyncio.gather(*coros, return_exceptions=True)
            saves, statuses, errors = results[0::3], results[1::3], results[2::3]
            assert all(isinstance(r, dict) and "seq" in r for r in saves)
            assert all(isinstance(r, dict) and "pending" in r and "version" in r for r in statuses)
            assert all(getattr(r, "code", None) == -32601 for r in errors)
            assert (await ob.status())["pending"]["total"] == 200

    run(main())


def test_threads_share_one_sync_client(spawn: Callable[..., Outbox]) -> None:
    ob = spawn(timeout=60)
    threads, per_thread = 8, 100
    barrier = threading.Barrier(threads)

    def worker(t: int):
        barrier.wait()
        return [
            ob.save_custom_event("threaded", properties={"t": t, "i": i}) for i in range(per_thread)
        ]

    with ThreadPoolExecutor(threads) as pool:
        results = [r for rs in pool.map(worker, range(threads)) for r in rs]
    assert len({r["id"] for r in results}) == threads * per_thread
    assert len({r["seq"] for r in results}) == threads * per_thread
    assert ob.status()["pending"]["total"] == threads * per_thread


def test_u2028_and_unicode_round_trip(spawn: Callable[..., Outbox]) -> None:
    ob = spawn()
    props = {"s": "line\u2028sep\u2029par", "emoji": "\U0001f600", "quote": "\"'\\"}
    ob.save_custom_event("unicode \u2028 name", properties=props)
    [item] = ob.flush_pending()["items"]
    assert item["name"] == "unicode \u2028 name"
    assert item["properties"] == props
