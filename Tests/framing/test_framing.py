"""Both framings over the real binary: auto detection, Content-Length replies, split headers and
bodies, every named header fault, the exit code 4 of a stream that cannot be resynchronised (after a
final snapshot), --max-line-bytes on a body, and --framing / PUSH_OUTBOX_FRAMING."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import FIXED, header_bodies, message, request, run

pytestmark = pytest.mark.timeout(60)

SAVE = request(1, "saveCustomEvent", {"name": "push_opened"})
STATUS = request(2, "status")


def fault(reply: dict) -> tuple:
    assert reply["id"] is None and reply["error"]["code"] == -32700, reply
    return reply["error"]["data"]["reason"], reply["error"]["data"]


def test_auto_detects_content_length_and_answers_in_it(binary: Path) -> None:
    proc = run(binary, message(SAVE) + message(STATUS), "--memory", *FIXED)
    assert proc.returncode == 0
    replies = header_bodies(
        proc.stdout
    )  # strictly `Content-Length: N\r\n\r\n` + body, nothing else
    assert replies[0]["result"]["pending"] == 1
    assert replies[1]["result"]["pending"]["total"] == 1


@pytest.mark.parametrize("before", [b"\xef\xbb\xbf", b"\r\n \t\n", b""])
def test_auto_detects_newline_after_a_bom_or_blank_lines(binary: Path, before: bytes) -> None:
    proc = run(binary, before + SAVE.encode() + b"\n", "--memory", *FIXED)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["result"]["pending"] == 1


@pytest.mark.parametrize(
    "headers",
    [
        "content-length: {n}\r\n",
        "CONTENT-LENGTH:{n}\r\n",
        "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: {n}\r\n",
        "Content-Length: {n}\r\nContent-Type: application/vscode-jsonrpc; charset=utf8\r\n",
        'Content-Length: {n}\r\ncontent-type: application/json; CHARSET="UTF-8"\r\nX-Other: 1\r\n',
    ],
)
def test_header_names_are_case_insensitive_and_utf8_content_types_are_read(
    binary: Path, headers: str
) -> None:
    proc = run(binary, message(SAVE, headers) + message(STATUS, headers), "--memory", *FIXED)
    assert proc.returncode == 0
    assert [r["id"] for r in header_bodies(proc.stdout)] == [1, 2]


def test_a_bom_before_the_first_header_and_in_a_body(binary: Path) -> None:
    data = b"\xef\xbb\xbf" + message(b"\xef\xbb\xbf" + SAVE.encode())
    proc = run(binary, data, "--memory", *FIXED)
    assert [r["result"]["pending"] for r in header_bodies(proc.stdout)] == [1]


def test_split_headers_and_a_body_split_across_reads(spawn) -> None:  # noqa: ANN001
    server = spawn("--memory", *FIXED)
    data = message(SAVE)
    cuts = [3, 9, 15, 17, 18, 19, 20, len(data) - 5, len(data) - 1]
    start = 0
    for cut in cuts:
        server.send(data[start:cut])
        start = cut
        time.sleep(0.05)  # separate reads on the server's side; no timing is asserted
        assert not server.has_output(0.05), "a reply came before the message was complete"
    server.send(data[start:])
    assert server.read_message()["result"]["pending"] == 1
    assert server.close() == 0
    assert server.rest() == b""


def test_a_charset_other_than_utf8_is_refused_and_the_next_message_served(binary: Path) -> None:
    latin1 = "Content-Length: {n}\r\nContent-Type: application/vscode-jsonrpc; charset=latin1\r\n"
    proc = run(binary, message(SAVE, latin1) + message(STATUS), "--memory", *FIXED)
    assert proc.returncode == 0
    refused, status = header_bodies(proc.stdout)
    reason, data = fault(refused)
    assert reason == "unsupported_charset" and data["charset"] == "latin1"
    assert status["result"]["pending"]["total"] == 0  # the refused body was not read


def test_max_line_bytes_bounds_a_body(binary: Path) -> None:
    big = request(1, "saveCustomEvent", {"name": "x" * 200})
    proc = run(
        binary, message(big) + message(STATUS), "--memory", "--max-line-bytes", "100", *FIXED
    )
    assert proc.returncode == 0
    too_long, status = header_bodies(proc.stdout)
    reason, data = fault(too_long)
    assert (reason, data["limit"], data["length"]) == ("line_too_long", 100, len(big))
    assert status["id"] == 2


def test_a_content_length_too_short_cuts_the_body_then_the_header_parse_fails(
    binary: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    args = ("--store", store, "--snapshot-interval", "86400", *FIXED)
    good = message(SAVE)
    short = message(STATUS, "Content-Length: 20\r\n")  # the body has more than 20 bytes
    proc = run(binary, good + short + message(STATUS), *args)
    replies = header_bodies(proc.stdout)
    assert replies[0]["result"]["pending"] == 1
    fault(replies[1])  # the first 20 bytes are not JSON: -32700
    assert fault(replies[2])[0] == "bad_header"  # the rest of the body is no header
    assert (
        len(replies) == 3
    )  # nothing after: the process does not guess where the next message starts
    assert proc.returncode == 4
    # The final snapshot was taken before exit 4: the save is in the snapshot, not only the journal.
    after = run(binary, (STATUS + "\n").encode(), *args)
    result = json.loads(after.stdout)["result"]
    assert result["pending"]["total"] == 1 and result["snapshotSeq"] >= 1


def test_a_content_length_too_long_waits_then_end_of_input_reports_the_cut(spawn) -> None:  # noqa: ANN001
    server = spawn("--memory", *FIXED)
    server.send(message(SAVE, "Content-Length: 500\r\n"))
    assert not server.has_output(0.3), "answered a body that has not all arrived"
    assert server.close() == 0  # end of input keeps its behaviour: exit 0
    (reply,) = header_bodies(server.rest())
    reason, data = fault(reply)
    assert reason == "truncated_body" and data["contentLength"] == 500
    assert data["received"] == len(SAVE)


@pytest.mark.parametrize(
    "bad, reason",
    [
        (b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}", "missing_content_length"),
        (b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "bad_content_length"),
        (b"Content-Length: two\r\n\r\n{}", "bad_content_length"),
        (b"Content-Length: 2\n\n{}", "bad_line_ending"),
        (b"Content-Length 2\r\n\r\n{}", "bad_header"),
        (b"X-Pad: " + b"a" * 9000 + b"\r\n", "header_too_long"),
    ],
)
def test_a_header_fault_gets_one_error_and_exit_4(binary: Path, bad: bytes, reason: str) -> None:
    proc = run(binary, message(SAVE) + bad + message(STATUS), "--memory", *FIXED)
    replies = header_bodies(proc.stdout)
    assert replies[0]["id"] == 1
    assert [fault(r)[0] for r in replies[1:]] == [reason]
    assert proc.returncode == 4, proc.stderr


def test_a_missing_header_at_the_start_with_content_length_framing(binary: Path) -> None:
    proc = run(binary, b"\r\n" + SAVE.encode(), "--memory", "--framing", "content-length")
    (reply,) = header_bodies(proc.stdout)
    assert fault(reply)[0] == "missing_content_length"
    assert proc.returncode == 4


def test_newline_input_under_content_length_framing_is_refused(binary: Path) -> None:
    proc = run(
        binary, (SAVE + "\n").encode(), "--memory", env={"PUSH_OUTBOX_FRAMING": "content-length"}
    )
    (reply,) = header_bodies(proc.stdout)
    assert fault(reply)[0] == "bad_line_ending"  # `{...}\n` is no `Name: value\r\n` header line
    assert proc.returncode == 4


def test_header_input_under_newline_framing_is_read_as_lines(binary: Path) -> None:
    proc = run(binary, message(SAVE) + b"\n", "--memory", "--framing", "newline", *FIXED)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert replies[0]["error"]["code"] == -32700  # the header line is no JSON
    assert replies[1]["result"]["pending"] == 1  # the blank line is skipped; the body is a line
    assert proc.returncode == 0


def test_a_bad_framing_value_is_a_usage_error(binary: Path) -> None:
    proc = run(binary, b"", "--memory", "--framing", "lsp")
    assert proc.returncode == 2
    assert b"--framing" in proc.stderr
