"""Client mechanics against tests/fake_server.py (no push-outbox binary needed).

These check what the real server cannot be made to do on demand: canned errors
for every code, null-id errors, huge/U+2028 lines, batch/CRLF replies, silence,
garbage, and death with a noisy stderr.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, List

import push_outbox
import pytest
from conftest import run, write_script
from push_outbox import (
    AsyncOutbox,
    CallTimeout,
    InvalidParams,
    MethodNotFound,
    Outbox,
    RpcError,
    ServerError,
    ServerExited,
    TransportError,
    _params,
    _process,
)
from push_outbox import _protocol as P
from push_outbox._discovery import candidate_build_binaries

pytestmark = pytest.mark.timeout(30)

ALL_CODES = {
    -32700: push_outbox.ParseError,
    -32600: push_outbox.InvalidRequest,
    -32601: push_outbox.MethodNotFound,
    -32602: push_outbox.InvalidParams,
    -32603: push_outbox.InternalError,
    -32001: push_outbox.StoreFull,
    -32002: push_outbox.ItemTooLarge,
    -32003: push_outbox.StorageUnavailable,
    -32004: push_outbox.LeaseNotFound,
    -32005: push_outbox.StoreLocked,
    -32006: push_outbox.UnsupportedStoreVersion,
}


# --- pure functions ----------------------------------------------------------------------------


def test_error_classes_by_code() -> None:
    for code, cls in ALL_CODES.items():
        err = push_outbox.error_from_response(
            {"code": code, "message": "m", "data": {"x": 1}}, method="status"
        )
        assert type(err) is cls
        assert isinstance(err, RpcError)
        assert (err.code, err.message, err.data, err.method) == (code, "m", {"x": 1}, "status")
    assert type(push_outbox.error_from_response({"code": -32050, "message": "m"})) is ServerError
    assert type(push_outbox.error_from_response({"code": 7, "message": "m"})) is RpcError
    for code in (-32001, -32002, -32003, -32004, -32005, -32006):
        assert issubclass(ALL_CODES[code], ServerError)


def test_invalid_params_errors_property() -> None:
    errors = [{"path": "properties.foo", "code": "string_too_long", "message": "too long"}]
    err = push_outbox.error_from_response(
        {"code": -32602, "message": "Invalid params", "data": {"errors": errors}}
    )
    assert isinstance(err, InvalidParams)
    assert err.errors == errors
    assert err.codes == ["string_too_long"]
    assert push_outbox.error_from_response({"code": -32602, "message": "x"}).errors == []  # type: ignore[attr-defined]


def test_exception_types() -> None:
    assert issubclass(CallTimeout, TimeoutError)
    assert issubclass(ServerExited, TransportError)
    assert issubclass(push_outbox.BinaryNotFound, FileNotFoundError)
    e = ServerExited(-9, "tail")
    assert e.returncode == -9 and e.signal == 9 and e.stderr_tail == "tail"


def test_encode_is_compact_one_line_and_strict() -> None:
    line = P.encode_request(1, "saveCustomEvent", {"name": "a\nb\u2028", "properties": {"k": 1}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert b" " not in line
    assert json.loads(line) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "saveCustomEvent",
        "params": {"name": "a\nb\u2028", "properties": {"k": 1}},
    }
    assert b"params" not in P.encode_request(2, "status", None)
    with pytest.raises(ValueError):
        P.encode_request(3, "x", {"v": float("nan")})
    with pytest.raises(ValueError):
        P.encode_request(3, "x", {"v": "\ud800"})
    with pytest.raises(TypeError):
        P.encode_request(3, "x", "not structured")  # type: ignore[arg-type]


def test_split_lines_only_on_newline() -> None:
    buf = bytearray("a\u2028b\u2029c\x85d\re\n".encode() + b"second\npartial")
    assert P.split_lines(buf) == ["a\u2028b\u2029c\x85d\re".encode(), b"second"]
    assert bytes(buf) == b"partial"


def test_stderr_tail_is_bounded() -> None:
    tail = _process.StderrTail(limit=100)
    for i in range(1000):
        tail.feed(f"line {i}\n".encode())
    data = tail.bytes()
    assert len(data) == 100 and data.endswith(b"line 999\n")
    tail.feed(b"x" * 500 + b"END")
    assert tail.bytes() == (b"x" * 500 + b"END")[-100:]


def test_format_time() -> None:
    t = dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert _params.format_time(t) == "2025-01-02T01:04:05.678Z"
    assert _params.format_time("2025-01-02T03:04:05Z") == "2025-01-02T03:04:05Z"
    with pytest.raises(ValueError):
        _params.format_time(dt.datetime(2025, 1, 2))


def test_param_builders_omit_unset_but_keep_explicit_null() -> None:
    assert _params.params_save_custom_event("e", None, None, None, None) == {"name": "e"}
    assert _params.params_save_custom_attribute("k", None, None, None, None) == {
        "key": "k",
        "value": None,
    }
    assert _params.params_save_custom_attribute("k", P.MISSING, "unset", None, None) == {
        "key": "k",
        "op": "unset",
    }
    assert _params.params_save_user_attribute("email", None, None, None) == {
        "field": "email",
        "value": None,
    }
    assert _params.params_flush_pending(5, "usersTrack", 1000, {"externalId": "u"}) == {
        "max": 5,
        "format": "usersTrack",
        "leaseMs": 1000,
        "defaultUser": {"externalId": "u"},
    }


def test_wire_method_table_matches_client_methods() -> None:
    for wire, py in P.WIRE_METHODS.items():
        assert callable(getattr(Outbox, py)), wire
        assert asyncio.iscoroutinefunction(getattr(AsyncOutbox, py)), wire
    assert set(P.WIRE_METHODS) == set(P.WIRE_PARAMS)


def test_find_binary_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_binary: str
) -> None:
    # explicit argument wins
    assert push_outbox.find_binary(fake_binary) == fake_binary
    with pytest.raises(push_outbox.BinaryNotFound):
        push_outbox.find_binary(tmp_path / "nope")
    # then $PUSH_OUTBOX_BIN
    monkeypatch.setenv("PUSH_OUTBOX_BIN", fake_binary)
    assert push_outbox.find_binary() == fake_binary
    monkeypatch.setenv("PUSH_OUTBOX_BIN", str(tmp_path / "missing"))
    with pytest.raises(push_outbox.BinaryNotFound):
        push_outbox.find_binary()
    monkeypatch.delenv("PUSH_OUTBOX_BIN")
    # then the binary bundled in the package (a platform wheel), before PATH
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = bindir / "push-outbox"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    assert push_outbox.find_binary(bundled=Path(fake_binary)) == fake_binary
    monkeypatch.setenv("PUSH_OUTBOX_BIN", str(on_path))
    assert push_outbox.find_binary(bundled=Path(fake_binary)) == str(on_path)
    monkeypatch.delenv("PUSH_OUTBOX_BIN")
    # then PATH (no bundled binary in a source checkout)
    assert push_outbox.find_binary(bundled=tmp_path / "absent") == str(on_path)
    assert push_outbox.find_binary() == str(on_path)
    # then .build/{release,debug} walking up from the cwd (newest of the two first)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    checkout = tmp_path / "checkout"
    deep = checkout / "a" / "b"
    deep.mkdir(parents=True)
    for config, mtime in (("release", 1_000_000), ("debug", 2_000_000)):
        d = checkout / ".build" / config
        d.mkdir(parents=True)
        exe = d / "push-outbox"
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
        os.utime(exe, (mtime, mtime))
    monkeypatch.chdir(deep)
    assert push_outbox.find_binary() == str(checkout / ".build" / "debug" / "push-outbox")


def test_find_binary_looks_in_build_static_after_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.ci/build-static` (Quick start, `.ci/install`) builds into .build-static/: found after .build/."""
    monkeypatch.delenv("PUSH_OUTBOX_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    checkout = tmp_path / "checkout"
    deep = checkout / "a" / "b"
    deep.mkdir(parents=True)

    def fake(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        return path

    static = fake(checkout / ".build-static" / "release" / "push-outbox")
    monkeypatch.chdir(deep)
    absent = tmp_path / "absent"
    assert push_outbox.find_binary(bundled=absent) == str(static)
    assert candidate_build_binaries(deep) == [static]
    # .build/ comes first at the same level, whichever is newer
    os.utime(static, (3_000_000, 3_000_000))
    debug = fake(checkout / ".build" / "debug" / "push-outbox")
    os.utime(debug, (1_000_000, 1_000_000))
    assert push_outbox.find_binary(bundled=absent) == str(debug)
    assert candidate_build_binaries(deep) == [debug, static]
    # a nearer .build-static/ beats a .build/ further up
    nearer = fake(checkout / "a" / ".build-static" / "debug" / "push-outbox")
    assert push_outbox.find_binary(bundled=absent) == str(nearer)


# --- through a pipe (fake server) ---------------------------------------------------------------


def test_ids_are_small_integers_from_one(tmp_path: Path, fake_binary: str) -> None:
    log = tmp_path / "received.jsonl"
    with Outbox.spawn(
        binary=fake_binary, args=["echo"], env={"FAKE_LOG": str(log)}, timeout=10
    ) as ob:
        assert ob.status() == {"method": "status", "params": {}, "id": 1}
        r = ob.save_custom_event("e", {"n": 1}, user={"externalId": "u"})
        assert r == {
            "method": "saveCustomEvent",
            "params": {"name": "e", "properties": {"n": 1}, "user": {"externalId": "u"}},
            "id": 2,
        }
        ob.notify("saveCustomEvent", {"name": "n"})
        assert ob.call("anything")["params"] == "<absent>"
        assert ob.flush_pending(max=3, lease_ms=10)["params"] == {"max": 3, "leaseMs": 10}
    lines = log.read_bytes().split(b"\n")[:-1]
    msgs = [json.loads(x) for x in lines]
    assert [m.get("id") for m in msgs] == [1, 2, None, 3, 4]
    assert all(m["jsonrpc"] == "2.0" for m in msgs)
    assert all(b" " not in x for x in lines)


def test_every_error_code_maps_to_its_class(fake_binary: str) -> None:
    for code, cls in ALL_CODES.items():
        with Outbox.spawn(binary=fake_binary, args=["error", str(code)], timeout=10) as ob:
            with pytest.raises(cls) as info:
                ob.ack_flush("f")
            assert info.value.code == code
            assert info.value.method == "ackFlush"
            if code == -32602:
                assert [e["code"] for e in info.value.errors] == ["missing", "unknown_param"]  # type: ignore[attr-defined]


def test_async_error_mapping(fake_binary: str) -> None:
    async def main() -> None:
        async with AsyncOutbox.spawn(
            binary=fake_binary, args=["error", "-32601"], timeout=10
        ) as ob:
            with pytest.raises(MethodNotFound):
                await ob.call("nope")

    run(main())


def test_null_id_error_goes_to_the_oldest_pending_call(fake_binary: str) -> None:
    with Outbox.spawn(binary=fake_binary, args=["nullid"], timeout=10) as ob:
        with pytest.raises(push_outbox.ParseError) as info:
            ob.status()
        assert info.value.data == {"reason": "line_too_long", "limit": 10}


def test_null_id_error_rejects_the_first_of_pipelined_calls(fake_binary: str) -> None:
    # Protocol/README.md, "Errors with id null": -32700/-32600 with id null answer the oldest pending
    # call. Ids are given out from 1, so the answered calls must be 2 and 3 and the failed one 1.
    with Outbox.spawn(binary=fake_binary, args=["nullid-first", "3"], timeout=10) as ob:
        results: List[Any] = []

        def call(name: str) -> None:
            try:
                results.append(ob.call(name))
            except push_outbox.ParseError as exc:
                results.append(exc)

        threads = [threading.Thread(target=call, args=(n,)) for n in ("a", "b", "c")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    failed = [r for r in results if isinstance(r, push_outbox.ParseError)]
    assert len(failed) == 1 and sorted(r["id"] for r in results if r not in failed) == [2, 3]

    async def main() -> None:
        async with AsyncOutbox.spawn(
            binary=fake_binary, args=["nullid-first", "3"], timeout=10
        ) as aob:
            got = await asyncio.gather(
                aob.call("a"), aob.call("b"), aob.call("c"), return_exceptions=True
            )
        assert isinstance(got[0], push_outbox.ParseError)
        assert got[1]["method"] == "b" and got[2]["method"] == "c"

    run(main())


@pytest.mark.parametrize("delay", ["0", "0.3"])
def test_id_null_startup_error_is_carried_by_server_exited(fake_binary: str, delay: str) -> None:
    # Whether the request is written before or after the server's id-null notice,
    # the outcome is the same: ServerExited(3) carrying the StoreLocked notice.
    with Outbox.spawn(binary=fake_binary, args=["locked", delay], timeout=10) as ob:
        with pytest.raises(ServerExited) as info:
            ob.status()
    assert info.value.returncode == 3
    assert isinstance(info.value.server_error, push_outbox.StoreLocked)
    assert info.value.server_error.data == {"reason": "store_locked"}
    assert "in use" in info.value.stderr_tail

    async def main() -> None:
        async with AsyncOutbox.spawn(binary=fake_binary, args=["locked", delay], timeout=10) as aob:
            with pytest.raises(ServerExited) as ainfo:
                await aob.status()
        assert ainfo.value.returncode == 3
        assert isinstance(ainfo.value.server_error, push_outbox.StoreLocked)

    run(main())


@pytest.mark.parametrize("size", [100_000, 10 * 1024 * 1024])
def test_huge_line_with_u2028_sync(fake_binary: str, size: int) -> None:
    with Outbox.spawn(binary=fake_binary, args=["big", str(size)], timeout=20) as ob:
        s = ob.status()
        assert isinstance(s, str) and len(s) == size and "\u2028" in s


@pytest.mark.parametrize("size", [100_000, 10 * 1024 * 1024])
def test_huge_line_with_u2028_async(fake_binary: str, size: int) -> None:
    async def main() -> None:
        async with AsyncOutbox.spawn(binary=fake_binary, args=["big", str(size)], timeout=20) as ob:
            s = await ob.status()
            assert isinstance(s, str) and len(s) == size and "\u2028" in s

    run(main())


def test_batch_and_crlf_replies_are_matched(fake_binary: str) -> None:
    with Outbox.spawn(binary=fake_binary, args=["batch"], timeout=10) as ob:
        assert ob.status() == {"method": "status"}
        assert ob.call("x") == {"method": "x"}


def test_call_timeout_sync_and_late_reply_dropped(fake_binary: str) -> None:
    with Outbox.spawn(binary=fake_binary, args=["delay", "1.0"], timeout=10) as ob:
        t0 = time.monotonic()
        with pytest.raises(CallTimeout) as info:
            ob.call("slow", timeout=0.3)
        assert time.monotonic() - t0 < 0.9
        assert isinstance(info.value, TimeoutError)
        assert info.value.request_id == 1
        # The late reply (id 1) must not be taken as the answer to id 2.
        assert ob.call("next") == {"id": 2}


def test_call_timeout_async_and_late_reply_dropped(fake_binary: str) -> None:
    async def main() -> None:
        async with AsyncOutbox.spawn(binary=fake_binary, args=["delay", "1.0"], timeout=10) as ob:
            with pytest.raises(CallTimeout):
                await ob.call("slow", timeout=0.3)
            assert await ob.call("next") == {"id": 2}

    run(main())


def test_silent_server_times_out_with_default_timeout(fake_binary: str) -> None:
    with Outbox.spawn(binary=fake_binary, args=["silent"], timeout=0.3) as ob:
        with pytest.raises(CallTimeout):
            ob.status()
    assert ob.returncode == 0  # the fake exits at stdin EOF


def test_death_with_noisy_stderr_sync(fake_binary: str) -> None:
    # ~210 KiB of stderr (more than a pipe buffer) must not block; the tail keeps the end.
    with Outbox.spawn(binary=fake_binary, args=["die", "7"], timeout=10) as ob:
        with pytest.raises(ServerExited) as info:
            ob.status()
        assert info.value.returncode == 7
        assert info.value.stderr_tail.endswith("FATAL: boom\n")
        assert len(info.value.stderr_tail.encode()) <= P.STDERR_TAIL_BYTES
        # later calls fail fast with the same information
        with pytest.raises(ServerExited) as again:
            ob.status()
        assert again.value.returncode == 7
    assert ob.close() == 7


def test_death_with_noisy_stderr_async(fake_binary: str) -> None:
    async def main() -> None:
        async with AsyncOutbox.spawn(binary=fake_binary, args=["die", "5"], timeout=10) as ob:
            with pytest.raises(ServerExited) as info:
                await ob.status()
            assert info.value.returncode == 5
            assert info.value.stderr_tail.endswith("FATAL: boom\n")
            with pytest.raises(ServerExited):
                await ob.status()

    run(main())


def test_stderr_handler_gets_lines(fake_binary: str) -> None:
    lines = []
    with Outbox.spawn(
        binary=fake_binary, args=["die", "1"], stderr_handler=lines.append, timeout=10
    ) as ob:
        with pytest.raises(ServerExited):
            ob.status()
    assert lines[-1] == "FATAL: boom"


def test_garbage_on_stdout_is_a_transport_error(fake_binary: str) -> None:
    with Outbox.spawn(binary=fake_binary, args=["garbage"], timeout=10) as ob:
        with pytest.raises(TransportError):
            ob.status()


def test_close_escalates_to_sigterm_then_sigkill(tmp_path: Path) -> None:
    hang = write_script(tmp_path, "hang", "exec sleep 30\n")
    ob = Outbox.spawn(binary=hang, close_timeout=0.3)
    t0 = time.monotonic()
    assert ob.close() == -15  # ignored EOF -> SIGTERM
    assert time.monotonic() - t0 < 5

    stubborn = write_script(tmp_path, "stubborn", "trap '' TERM\nexec sleep 30\n")
    ob = Outbox.spawn(binary=stubborn, close_timeout=0.3)
    t0 = time.monotonic()
    assert ob.close() == -9  # ignored SIGTERM -> SIGKILL
    assert time.monotonic() - t0 < 8
    assert ob.close() == -9  # idempotent

    async def main() -> None:
        aob = await AsyncOutbox.spawn(binary=stubborn, close_timeout=0.3)
        assert await aob.close() == -9
        assert await aob.close() == -9

    run(main())


def test_calls_after_close_raise(fake_binary: str) -> None:
    ob = Outbox.spawn(binary=fake_binary, args=["echo"], timeout=10)
    assert ob.close() == 0
    with pytest.raises(TransportError):
        ob.status()
