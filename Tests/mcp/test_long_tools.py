"""Long tools over the official MCP SDK: `tools/call` of `deliverPending` is answered when its pass
ends while other calls are answered at once; `_meta.progressToken` brings `notifications/progress`;
cancelling the call (the SDK sends `notifications/cancelled`) starts nothing new, and nothing is
lost or sent twice. Braze is the delivery tests' stub, holding its answers behind a gate the test
opens, so every order asserted here is forced by the test, not by timing."""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import anyio
import pytest
from conftest import FIXED, REPO, Session, initialize, meta
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(REPO / "Tests/delivery"))
from braze_stub import BrazeStub, Reply  # noqa: E402

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def stub() -> Iterator[BrazeStub]:
    server = BrazeStub().start()
    yield server
    server.stop()


@pytest.fixture
def store() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="push-outbox-mcp-") as root:
        yield Path(root) / "store"


def gated(stub: BrazeStub) -> threading.Event:
    """The stub answers nothing until the returned event is set."""
    gate = threading.Event()

    def respond(body: Any) -> Reply:
        gate.wait(60)
        return Reply()

    stub.responder = respond
    return gate


def params(binary: Path, store: Path, stub: BrazeStub, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(binary),
        args=[
            "--store",
            str(store),
            "--braze-endpoint",
            stub.url,
            "--braze-backoff-ms",
            "20",
            *args,
        ],
        env={"BRAZE_API_KEY": "test-key"},
    )


async def until(predicate: Any, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


async def save(s: ClientSession, count: int) -> List[str]:
    names = []
    for n in range(count):
        result = await s.call_tool(
            "saveCustomEvent", {"name": f"e{n}", "user": {"externalId": f"u{n}"}}
        )
        assert result.is_error is False, result
        names.append(f"e{n}")
    return names


def test_a_long_tool_is_answered_when_its_pass_ends_with_progress(
    binary: Path, store: Path, stub: BrazeStub
) -> None:
    gate = gated(stub)
    progress: List[Tuple[float, Any]] = []

    async def main() -> None:
        args = ("--braze-max-in-flight", "1", "--track-batch-limit", "1")
        async with (
            stdio_client(params(binary, store, stub, *args)) as (r, w),
            ClientSession(r, w) as s,
        ):
            await s.initialize()
            await save(s, 5)
            outcome: Dict[str, Any] = {}

            async def deliver() -> None:
                async def on_progress(done: float, total: Any, message: Any) -> None:
                    progress.append((done, total))

                outcome["result"] = await s.call_tool(
                    "deliverPending", {}, progress_callback=on_progress
                )

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(deliver)
                await until(lambda: stub.in_flight >= 1)
                status = await s.call_tool("status", {})  # answered while the pass waits on Braze
                assert status.structured_content is not None
                assert status.structured_content["delivery"]["inFlight"] == 1
                assert "result" not in outcome
                gate.set()
            result = outcome["result"]
            assert result.is_error is False
            assert result.structured_content == {
                "delivered": 5,
                "deadLettered": 0,
                "retrying": 0,
                "remaining": 0,
            }

    anyio.run(main)
    assert progress, "no notifications/progress for the call's progressToken"
    done = [p for p, _ in progress]
    assert done == sorted(done)
    assert progress[-1] == (5, 5)
    assert sorted(o["name"] for o in stub.objects()) == [f"e{n}" for n in range(5)]


def test_cancelling_a_long_tool_starts_nothing_new(
    binary: Path, store: Path, stub: BrazeStub
) -> None:
    """The first request waits for `gate`; any later one (a pass that went on after the cancel) waits
    for `later`, so it stays in flight and the store never settles: the test fails."""
    gate, later = threading.Event(), threading.Event()
    first = threading.Lock()

    def respond(body: Any) -> Reply:
        (gate if first.acquire(blocking=False) else later).wait(60)
        return Reply()

    stub.responder = respond

    async def main() -> None:
        args = ("--braze-max-in-flight", "1", "--track-batch-limit", "1")
        async with (
            stdio_client(params(binary, store, stub, *args)) as (r, w),
            ClientSession(r, w) as s,
        ):
            await s.initialize()
            saved = await save(s, 6)
            with anyio.move_on_after(30) as scope:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(s.call_tool, "deliverPending", {})
                    await until(lambda: stub.in_flight >= 1)
                    tasks.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            assert not scope.cancelled_caught
            # The server took the cancel: only now may Braze answer the one request in flight.
            status = await s.call_tool("status", {})
            assert status.structured_content is not None
            gate.set()

            async def settled() -> bool:
                result = await s.call_tool("status", {})
                return (
                    result.structured_content is not None
                    and result.structured_content["delivery"]["inFlight"] == 0
                )

            try:
                with anyio.fail_after(20):
                    while not await settled():
                        await anyio.sleep(0.02)
            finally:
                later.set()
            flushed = await s.call_tool("flushPending", {})
            assert flushed.structured_content is not None
            pending = [i["name"] for i in flushed.structured_content["items"]]
            received = [o["name"] for o in stub.objects()]
            assert len(received) == 1, f"the cancelled pass went on: {received}"
            assert sorted(received + pending) == sorted(saved)  # nothing lost, nothing sent twice

    anyio.run(main)


@pytest.mark.parametrize("stateless", [False, True])
def test_on_the_wire_a_cancelled_tool_call_gets_no_reply_and_progress_names_its_token(
    binary: Path, store: Path, stub: BrazeStub, stateless: bool
) -> None:
    """MCP: a server does not answer a request the client cancelled (2025-11-25 SHOULD NOT; 2026-07-28
    on stdio MUST NOT). The progress notifications carry the call's own `_meta.progressToken`."""
    gate = gated(stub)
    s = Session(
        binary,
        "--store",
        str(store),
        "--braze-endpoint",
        stub.url,
        "--braze-max-in-flight",
        "1",
        "--track-batch-limit",
        "1",
        *FIXED,
        env={"BRAZE_API_KEY": "test-key"},
    )
    if not stateless:
        initialize(s)
    extra = (
        {"_meta": meta(progressToken="p-1")} if stateless else {"_meta": {"progressToken": "p-1"}}
    )
    for n in range(3):
        saved = s.call(
            "tools/call",
            {
                "name": "saveCustomEvent",
                "arguments": {"name": f"e{n}", "user": {"externalId": "u"}},
                **extra,
            },
        )
        assert saved["result"]["isError"] is False
    s.send(
        {
            "jsonrpc": "2.0",
            "id": "long",
            "method": "tools/call",
            "params": {"name": "deliverPending", **extra},
        }
    )
    deadline = time.monotonic() + 30
    while stub.in_flight < 1:  # the pass waits on Braze
        assert time.monotonic() < deadline
        time.sleep(0.01)
    status = s.call("status")  # answered while the pass waits
    assert status["result"]["delivery"]["inFlight"] == 1
    cancel = {"requestId": "long", "reason": "test"}
    if stateless:  # MCP's CancelledNotificationParams may carry `_meta` (NotificationMetaObject)
        cancel["_meta"] = {"io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
    s.notify("notifications/cancelled", cancel)
    gate.set()
    while s.call("status")["result"]["delivery"]["inFlight"] != 0:
        assert time.monotonic() < deadline + 30
        time.sleep(0.01)
    progress = [n for n in s.notifications if n["method"] == "notifications/progress"]
    assert progress and all(n["params"]["progressToken"] == "p-1" for n in progress)
    assert s.close() == 0  # nothing more: no reply to "long"
