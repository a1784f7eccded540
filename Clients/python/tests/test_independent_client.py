"""An independent JSON-RPC client (jsonrpcclient 4.0.3) over a raw pipe, no push_outbox code involved."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import server_env

pytestmark = pytest.mark.timeout(30)


def _import_jsonrpcclient():
    try:
        from jsonrpcclient import Error, Ok, parse, request
    except ImportError:  # a missing test dependency is a failure, not a skip
        pytest.fail(
            "jsonrpcclient is required: pip install -r Clients/python/requirements-test.txt",
            pytrace=False,
        )
    return request, parse, Ok, Error


def test_save_and_flush_cycle_with_jsonrpcclient(binary: str) -> None:
    request, parse, Ok, Error = _import_jsonrpcclient()
    proc = subprocess.Popen(
        [binary, "--memory"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None

    def roundtrip(req: dict):
        proc.stdin.write(json.dumps(req).encode() + b"\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line.endswith(b"\n"), f"no reply line (got {line!r})"
        response = parse(json.loads(line))
        assert response.id == req["id"]
        return response

    try:
        props = {"step": 1, "opened": True, "ratio": 0.5, "label": "hi"}
        saved = roundtrip(
            request(
                "saveCustomEvent",
                params={"name": "push_opened", "properties": props, "user": {"externalId": "u1"}},
            )
        )
        assert isinstance(saved, Ok), saved
        assert saved.result["pending"] == 1
        assert isinstance(saved.result["id"], str)

        missing = roundtrip(request("noSuchMethod"))
        assert isinstance(missing, Error) and missing.code == -32601

        flushed = roundtrip(request("flushPending"))  # jsonrpcclient omits empty params
        assert isinstance(flushed, Ok), flushed
        [item] = flushed.result["items"]
        assert item["id"] == saved.result["id"]
        assert item["name"] == "push_opened"
        p = item["properties"]
        assert p == props
        assert type(p["step"]) is int and p["step"] == 1
        assert p["opened"] is True
        assert type(p["ratio"]) is float
        assert flushed.result["remaining"] == 0

        empty = roundtrip(request("flushPending", params={"max": 10}))
        assert isinstance(empty, Ok) and empty.result["items"] == []
    finally:
        proc.stdin.close()
        rc = proc.wait(timeout=10)
        proc.stdout.close()
    assert rc == 0
