"""Third-party Content-Length clients (none written here) against the real binary: pygls'
`JsonRPCClient` (asyncio) and python-lsp-jsonrpc's `JsonRpcStreamReader`/`JsonRpcStreamWriter`
under its `Endpoint`. Each saves, flushes, reads the status, then shuts down and exits (code 0)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED

pytestmark = pytest.mark.timeout(60)


def _plain(value: Any) -> Any:
    """pygls hands back results of methods it does not know as named tuples; make them dicts."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def test_pygls_json_rpc_client(binary: Path) -> None:
    from pygls.client import JsonRPCClient

    async def session() -> tuple:
        client = JsonRPCClient()
        await client.start_io(str(binary), "--memory", *FIXED)
        call = client.protocol.send_request_async
        saved = _plain(await asyncio.wait_for(call("saveCustomEvent", {"name": "push_opened"}), 10))
        flushed = _plain(await asyncio.wait_for(call("flushPending", {}), 10))
        status = _plain(await asyncio.wait_for(call("status", {}), 10))
        shut = await asyncio.wait_for(call("shutdown"), 10)
        client.protocol.notify("exit")
        code = await asyncio.wait_for(client._server.wait(), 10)
        await client.stop()
        return saved, flushed, status, shut, code

    saved, flushed, status, shut, code = asyncio.run(session())
    assert saved["pending"] == 1
    assert [item["name"] for item in flushed["items"]] == ["push_opened"]
    assert status["pending"]["total"] == 0
    assert shut is None
    assert code == 0


def test_python_lsp_jsonrpc_streams(binary: Path) -> None:
    from pylsp_jsonrpc.endpoint import Endpoint
    from pylsp_jsonrpc.streams import JsonRpcStreamReader, JsonRpcStreamWriter

    proc = subprocess.Popen(
        [str(binary), "--memory", *FIXED], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        writer = JsonRpcStreamWriter(proc.stdin)  # sends Content-Type: ...; charset=utf8 too
        reader = JsonRpcStreamReader(proc.stdout)
        endpoint = Endpoint({}, writer.write)
        listener = threading.Thread(target=reader.listen, args=(endpoint.consume,), daemon=True)
        listener.start()
        saved = endpoint.request("saveCustomEvent", {"name": "push_opened"}).result(timeout=10)
        flushed = endpoint.request("flushPending", {}).result(timeout=10)
        assert saved["pending"] == 1
        assert [item["name"] for item in flushed["items"]] == ["push_opened"]
        assert endpoint.request("shutdown").result(timeout=10) is None
        endpoint.notify("exit")
        assert proc.wait(timeout=10) == 0
        listener.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
