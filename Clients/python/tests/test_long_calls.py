"""Long calls from both clients against the real binary and a local Braze stub (Protocol/README.md,
"Long calls"): replies out of request order, cancelling (an explicit call in the sync client, task
cancellation in asyncio) and progress callbacks.

The stub holds its answers behind a gate the test opens, so every ordering is forced by the test."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any, Callable, Iterator, List

import pytest
from conftest import REPO_ROOT, run, server_env
from push_outbox import AsyncOutbox, Outbox, ParseError, RequestCancelled, WorkDoneProgress

sys.path.insert(0, str(REPO_ROOT / "Tests" / "delivery"))
from braze_stub import BrazeStub, Reply  # noqa: E402

pytestmark = pytest.mark.timeout(120)


class Gate:
    """Makes the stub hold every answer until `open()`."""

    def __init__(self, stub: BrazeStub) -> None:
        self.event = threading.Event()
        stub.responder = self._respond

    def _respond(self, body: Any) -> Reply:
        self.event.wait(60)
        return Reply()

    def open(self) -> None:
        self.event.set()


@pytest.fixture
def stub() -> Iterator[BrazeStub]:
    server = BrazeStub().start()
    yield server
    server.stop()


def delivery_kw(stub: BrazeStub, *args: str) -> dict:
    env = {**server_env(), "BRAZE_API_KEY": "test-key"}
    return {"env": env, "args": ["--braze-endpoint", stub.url, "--braze-backoff-ms", "20", *args]}


def wait_until(predicate: Callable[[], bool]) -> None:
    """Waits for `predicate()`; the deadline only guards against a hang."""
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def save_for_users(ob: Outbox, count: int) -> None:
    for n in range(count):
        ob.save_custom_event(f"e{n}", user={"externalId": f"u{n}"})


# --- sync ----------------------------------------------------------------------------------


def test_sync_replies_out_of_order(spawn: Callable[..., Outbox], stub: BrazeStub) -> None:
    gate = Gate(stub)
    ob = spawn(**delivery_kw(stub))
    save_for_users(ob, 3)
    pass_ = ob.start("deliverPending", {})
    wait_until(lambda: stub.in_flight >= 1)
    assert ob.status()["pending"]["total"] == 3  # answered while the pass waits on Braze
    ob.save_custom_event("late", user={"externalId": "z"})
    assert not pass_._slot.event.is_set()
    gate.open()
    result = pass_.result()
    assert result["delivered"] + result["remaining"] == 4


def test_sync_cancel_answers_at_once_and_stops_the_pass(
    spawn: Callable[..., Outbox], stub: BrazeStub
) -> None:
    gate = Gate(stub)
    ob = spawn(**delivery_kw(stub, "--braze-max-in-flight", "1", "--track-batch-limit", "1"))
    save_for_users(ob, 5)
    pass_ = ob.start("deliverPending", {})
    wait_until(lambda: stub.in_flight >= 1)
    pass_.cancel()
    with pytest.raises(RequestCancelled) as caught:
        pass_.result(timeout=10)  # while Braze still holds its answer
    assert caught.value.code == -32800 and caught.value.data == {"reason": "request_cancelled"}
    gate.open()
    wait_until(lambda: ob.status()["delivery"]["inFlight"] == 0)
    assert len(stub.requests) == 1  # the request in flight finished; nothing new started
    assert ob.status()["pending"]["total"] == 4


def test_sync_cancel_method_and_mcp_form(spawn: Callable[..., Outbox], stub: BrazeStub) -> None:
    gate = Gate(stub)
    ob = spawn(**delivery_kw(stub))
    save_for_users(ob, 2)
    first = ob.start("deliverPending", {})
    wait_until(lambda: stub.in_flight >= 1)
    ob.cancel(first.id)
    with pytest.raises(RequestCancelled):
        first.result(timeout=10)
    second = ob.start("deliverPending", {})
    ob.notify_cancelled(second.id, "user gave up")
    with pytest.raises(RequestCancelled) as caught:
        second.result(timeout=10)
    assert caught.value.data == {"reason": "request_cancelled", "detail": "user gave up"}
    ob.cancel(12345)  # unknown: nothing happens
    gate.open()
    assert ob.status()["pending"]["total"] in (0, 1, 2)


def test_sync_progress_callback(spawn: Callable[..., Outbox], stub: BrazeStub) -> None:
    stub.responder = lambda body: Reply(stall=0.004)
    ob = spawn(**delivery_kw(stub, "--track-batch-limit", "1", "--braze-max-in-flight", "2"))
    save_for_users(ob, 60)
    seen: List[WorkDoneProgress] = []
    result = ob.deliver_pending(progress=seen.append)
    assert result["delivered"] == 60
    kinds = [v["kind"] for v in seen]
    assert kinds[0] == "begin" and kinds[-1] == "end" and set(kinds[1:-1]) <= {"report"}
    assert seen[0]["title"] == "deliverPending" and seen[-1]["message"] == "60/60 items"


def test_an_id_null_error_goes_to_the_call_it_answers_not_to_a_long_call(
    spawn: Callable[..., Outbox], stub: BrazeStub
) -> None:
    gate = Gate(stub)
    ob = spawn(**delivery_kw(stub, "--max-line-bytes", "2000"))
    save_for_users(ob, 1)
    pass_ = ob.start("deliverPending", {})  # older, still pending
    wait_until(lambda: stub.in_flight >= 1)
    with pytest.raises(ParseError):
        ob.save_custom_event("big", properties={"pad": "x" * 5000})  # line too long: id null
    gate.open()
    assert pass_.result()["delivered"] == 1


# --- asyncio -------------------------------------------------------------------------------


def test_async_replies_out_of_order(aspawn: Callable[..., AsyncOutbox], stub: BrazeStub) -> None:
    gate = Gate(stub)

    async def main() -> None:
        async with aspawn(**delivery_kw(stub)) as ob:
            for n in range(3):
                await ob.save_custom_event(f"e{n}", user={"externalId": f"u{n}"})
            task = asyncio.ensure_future(ob.deliver_pending())
            while stub.in_flight < 1:
                await asyncio.sleep(0.01)
            assert (await ob.status())["pending"]["total"] == 3
            assert not task.done()
            gate.open()
            assert (await task)["delivered"] == 3

    run(main())


def test_async_task_cancellation_sends_cancel_request(
    aspawn: Callable[..., AsyncOutbox], stub: BrazeStub
) -> None:
    gate = Gate(stub)

    async def main() -> None:
        kw = delivery_kw(stub, "--braze-max-in-flight", "1", "--track-batch-limit", "1")
        async with aspawn(**kw) as ob:
            for n in range(5):
                await ob.save_custom_event(f"e{n}", user={"externalId": f"u{n}"})
            task = asyncio.ensure_future(ob.deliver_pending())
            while stub.in_flight < 1:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            gate.open()
            while (await ob.status())["delivery"]["inFlight"]:
                await asyncio.sleep(0.01)
            # The server stopped the pass: only the request in flight was sent and applied.
            assert len(stub.requests) == 1
            assert (await ob.status())["pending"]["total"] == 4

    run(main())


def test_async_progress_callback(aspawn: Callable[..., AsyncOutbox], stub: BrazeStub) -> None:
    stub.responder = lambda body: Reply(stall=0.004)

    async def main() -> None:
        kw = delivery_kw(stub, "--track-batch-limit", "1", "--braze-max-in-flight", "2")
        async with aspawn(**kw) as ob:
            for n in range(60):
                await ob.save_custom_event(f"e{n}", user={"externalId": f"u{n}"})
            seen: List[WorkDoneProgress] = []
            result = await ob.deliver_pending(progress=seen.append)
            assert result["delivered"] == 60
            assert seen[0]["kind"] == "begin" and seen[-1]["kind"] == "end"
            percentages = [v["percentage"] for v in seen if "percentage" in v]
            assert percentages == sorted(percentages)

    run(main())
