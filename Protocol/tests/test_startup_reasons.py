"""`-32007 Start-up failed`: the `data.reason` values the binary can send are the ones documented.

The set the code can send is read from the Swift sources: every `-32007` is built by
`StartupError.refused(REASON, …)` or `RPCError.startupFailed(REASON, …)`, always with a literal
reason (checked here). openrpc.json's enum, Protocol/README.md's error table and the start-up
paragraph of Protocol/command-line.md must list exactly that set; several are triggered over the binary.
Run from the repository root: python3 -m pytest Protocol/tests
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Set, Tuple

import pytest

HERE = Path(__file__).resolve().parent
PROTOCOL = HERE.parent
ROOT = PROTOCOL.parent
sys.path.insert(0, str(HERE))
import replay  # noqa: E402  (Protocol/tests/replay.py, standard library only)

SOURCES = ROOT / "Sources"
# A call of one of the two builders of -32007, with its first argument.
# (Neither `case .refused(let reason, …)`, which maps the value to the wire, nor the builder's own
# `.refused(reason: reason, …)` is a call with a reason to read.)
BUILDER_CALL = re.compile(r"(?<!case )\.(refused|startupFailed)\(\s*(?!reason:)(\S)")
LITERAL_REASON = re.compile(r'\.(?:refused|startupFailed)\(\s*"([a-z_]+)"')


# Targets that cannot see `StartupError` (their dependencies in Package.swift stop below OutboxStore),
# so a `.refused(` there is another type's (OutboxNATS's publish refusals).
BELOW_STARTUP_ERROR = {"OutboxNATS"}


def swift_sources() -> List[Tuple[Path, str]]:
    return [
        (p, p.read_text(encoding="utf-8"))
        for p in sorted(SOURCES.rglob("*.swift"))
        if p.relative_to(SOURCES).parts[0] not in BELOW_STARTUP_ERROR
    ]


def reasons_in_sources() -> Set[str]:
    reasons: Set[str] = set()
    for path, text in swift_sources():
        for match in BUILDER_CALL.finditer(text):
            assert match.group(2) == '"', (
                f"{path.relative_to(ROOT)}: .{match.group(1)}( with a reason that is not a literal; "
                "this test cannot read it"
            )
        reasons.update(LITERAL_REASON.findall(text))
    return reasons


def test_only_the_two_builders_make_a_startup_failed_error() -> None:
    """Every -32007 comes from `refused` or `startupFailed`, so their literal reasons are all."""
    # The code is named once, as ErrorCode.startupFailed.
    named = []
    for path, text in swift_sources():
        for line in text.splitlines():
            if re.search(r"-32007\b", line) and not line.lstrip().startswith("///"):
                named.append((path.relative_to(ROOT).as_posix(), line.strip()))
    assert named == [
        (
            "Sources/OutboxJSONRPC/RPCError.swift",
            "package static let startupFailed = ErrorCode(rawValue: -32007)",
        )
    ]
    # It is used in one place: where a StartupError (whose `refused` takes the literal reason) or a
    # usage failure (`startupFailed`, with a literal reason) becomes the wire's error.
    users = sorted(
        path.relative_to(ROOT).as_posix()
        for path, text in swift_sources()
        if re.search(r"\(\.startupFailed,|ErrorCode\.startupFailed", text)
    )
    assert users == ["Sources/OutboxServer/Service/StartupError+Wire.swift"]
    wire = (SOURCES / "OutboxServer" / "Service" / "StartupError+Wire.swift").read_text(
        encoding="utf-8"
    )
    assert (
        len(re.findall(r"\.app\(\s*\.startupFailed,", wire)) == 2
    )  # `refused`, and `startupFailed`
    # A StartupError of kind `unavailable` (a file that cannot be read) is sent as store_unavailable.
    assert re.search(r'case \.unavailable:\s*\.startupFailed\("store_unavailable", message\)', wire)


def documented_in_openrpc() -> Set[str]:
    doc = json.loads((PROTOCOL / "openrpc.json").read_text(encoding="utf-8"))
    enum = doc["components"]["errors"]["StartupFailed"]["data"]["properties"]["reason"]["enum"]
    assert len(enum) == len(set(enum))
    return set(enum)


def documented_in_protocol_readme() -> Set[str]:
    text = (PROTOCOL / "README.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| -32007 |")]
    assert len(rows) == 1, rows
    data_cell = rows[0].rstrip(" |").rsplit(" | ", 1)[-1]
    shape = re.match(r"`\{reason: ([^`]*), detail\}`", data_cell)
    assert shape, data_cell
    return set(re.findall(r'"([a-z_]+)"', shape.group(1)))


def documented_in_command_line_page() -> Set[str]:
    text = " ".join((PROTOCOL / "command-line.md").read_text(encoding="utf-8").split())
    found = re.search(r"`-32007` with `reason` one of ([^;)]*)[;)]", text)
    assert found, (
        "Protocol/command-line.md no longer lists the -32007 reasons after '`-32007` with `reason` one of'"
    )
    return set(re.findall(r"`([a-z_]+)`", found.group(1)))


def test_the_code_has_the_reasons_this_test_expects_to_find() -> None:
    # Guards the regular expressions: if they stop matching, the comparisons below mean nothing.
    assert {
        "usage",
        "store_unavailable",
        "cannot_create_store",
        "unsafe_store",
    } <= reasons_in_sources()


@pytest.mark.parametrize(
    "where,documented",
    [
        ("Protocol/openrpc.json", documented_in_openrpc),
        ("Protocol/README.md", documented_in_protocol_readme),
        ("Protocol/command-line.md", documented_in_command_line_page),
    ],
)
def test_documented_reasons_are_the_reasons_the_code_sends(where: str, documented) -> None:
    sent, listed = reasons_in_sources(), documented()
    assert listed == sent, (
        f"{where}: documents {sorted(listed - sent)} that the code never sends, "
        f"and omits {sorted(sent - listed)} that it does"
    )


# MARK: - over the binary


def _binary() -> Optional[Path]:
    try:
        return replay.find_binary()
    except Exception:  # noqa: BLE001  (no binary built: skipped, as test_openrpc does)
        return None


def start(tmp_path: Path, args: List[str], stdin=subprocess.DEVNULL) -> Tuple[int, dict]:
    binary = _binary()
    if binary is None:
        pytest.skip("push-outbox binary not built")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    # Never the user's default store, whatever happens.
    env.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "state"))
    done = subprocess.run(
        [str(binary), *args], stdin=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=30
    )
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, (done.returncode, done.stdout, done.stderr)
    reply = json.loads(lines[0])
    assert reply["id"] is None and reply["error"]["code"] == -32007, reply
    assert done.stderr.decode().startswith("push-outbox: "), done.stderr
    return done.returncode, reply["error"]["data"]


def expect(tmp_path: Path, reason: str, exit_code: int, args: List[str], stdin=subprocess.DEVNULL):
    code, data = start(tmp_path, args, stdin)
    assert (data["reason"], code) == (reason, exit_code), data
    assert reason in documented_in_openrpc() and reason in reasons_in_sources()
    assert isinstance(data["detail"], str) and data["detail"]
    return data


def test_usage(tmp_path: Path) -> None:
    expect(tmp_path, "usage", 2, ["--no-such-flag"])


def test_cannot_create_store(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    expect(tmp_path, "cannot_create_store", 1, ["--store", str(tmp_path / "file" / "store")])


def test_unsafe_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o777)
    expect(tmp_path, "unsafe_store", 1, ["--store", str(store)])


def test_unreadable_input(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        expect(tmp_path, "unreadable_input", 1, ["--store", str(tmp_path / "store")], stdin=fd)
    finally:
        os.close(fd)


def test_missing_data(tmp_path: Path) -> None:
    store = tmp_path / "store"
    binary = _binary()
    if binary is None:
        pytest.skip("push-outbox binary not built")
    save = '{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"e"}}\n'
    subprocess.run(
        [str(binary), "--store", str(store)],
        input=save.encode(),
        check=True,
        capture_output=True,
        timeout=30,
    )
    segments = list(store.glob("segment.*"))
    assert segments
    for segment in segments:
        segment.unlink()
    data = expect(tmp_path, "missing_data", 1, ["--store", str(store)])
    assert data["fromSeq"] == 1


def test_store_unavailable(tmp_path: Path) -> None:
    """A format-1 snapshot that is corrupt, with no journal to rebuild it (a StartupError with no
    reason of its own: main.swift sends it as store_unavailable)."""
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "snapshot.json").write_text("garbage\n")
    expect(tmp_path, "store_unavailable", 1, ["--store", str(store)])
