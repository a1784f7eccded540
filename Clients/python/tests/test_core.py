"""The sans-I/O core both Python clients share (push_outbox._core), without any process."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest
from conftest import SRC  # noqa: F401  (puts the checkout's package first on sys.path)
from push_outbox import ParseError, StoreLocked, TransportError
from push_outbox._core import Session, result_of


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def reply(rid: Any, result: Any = None, error: Any = None) -> Dict[str, Any]:
    body: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    return body


def test_requests_get_increasing_ids_and_one_line_each() -> None:
    session: Session[str] = Session()
    first, data = session.open_call("status", None, "a")
    second, _ = session.open_call("status", {}, "b")
    assert (first, second) == (1, 2) and session.pending_count == 2
    assert data.endswith(b"\n") and json.loads(data) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "status",
    }


def test_replies_split_across_chunks_are_routed_by_id() -> None:
    session: Session[str] = Session()
    for waiter in ("a", "b"):
        session.open_call("m", None, waiter)
    data = line(reply(2, "two")) + line(reply(1, "one"))
    settled: List[Any] = []
    for i in range(len(data)):
        settled += session.receive(data[i : i + 1])
    assert [(w, r["result"]) for w, r in settled] == [("b", "two"), ("a", "one")]
    assert session.pending_count == 0


def test_id_null_parse_error_answers_the_oldest_pending_call() -> None:
    session: Session[str] = Session()
    for waiter in ("a", "b", "c"):
        session.open_call("m", None, waiter)
    error = {"code": -32700, "message": "Parse error", "data": {"reason": "line_too_long"}}
    settled = session.receive(line(reply(None, error=error)) + line(reply(3, "c")))
    assert [w for w, _ in settled] == ["a", "c"]
    with pytest.raises(ParseError):
        result_of(settled[0][1], "m", 1)  # type: ignore[arg-type]


def test_other_id_null_errors_answer_no_call_and_are_kept() -> None:
    session: Session[str] = Session()
    session.open_call("m", None, "a")
    error = {
        "code": -32005,
        "message": "Store locked",
        "data": {"reason": "store_locked", "pid": "1"},
    }
    assert session.receive(line(reply(None, error=error))) == []
    assert isinstance(session.server_error, StoreLocked) and session.pending_count == 1


def test_a_last_line_without_newline_counts_at_end_of_stream() -> None:
    session: Session[str] = Session()
    session.open_call("m", None, "a")
    assert session.receive(line(reply(1, "x"))[:-1]) == []
    assert [w for w, _ in session.end_of_stream()] == ["a"]


def test_a_line_that_is_not_json_fails_every_pending_call() -> None:
    session: Session[str] = Session()
    session.open_call("m", None, "a")
    session.open_call("m", None, "b")
    settled = session.receive(b"not json\n")
    assert [w for w, _ in settled] == ["a", "b"]
    assert all(isinstance(outcome, TransportError) for _, outcome in settled)
