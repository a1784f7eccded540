"""Replay every Protocol/transcripts/*.txt against the real binary.

The transcript format is Protocol/README.md, "Transcript format"; a malformed line is an error:
  > RAW        send RAW verbatim (everything after "> "; a bare ">" sends an empty line)
  < JSON       expected reply, compared as parsed JSON (deep equality, order of lines kept)
  #! args: A B extra command-line arguments (split on spaces and tabs); may repeat
  #! framing: content-length   each RAW is sent as one LSP message (Content-Length header, no
               newline) and the replies are read the same way (the default is newline)
  # ...        comment;  blank lines (empty, or spaces and tabs only) are ignored

The binary runs with ``--memory --fixed-clock 2026-01-01T00:00:00.000Z --id-seed 1``
plus the extra args; all ``>`` lines are written, stdin is closed, and the full
list of stdout lines must equal the list of ``<`` lines (so a notification that
must not answer is checked by the absence of a line).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

import pytest
from conftest import TRANSCRIPTS_DIR, server_env

BASE_ARGS = ["--memory", "--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]

TRANSCRIPTS = sorted(TRANSCRIPTS_DIR.glob("*.txt"))


@dataclass
class Transcript:
    path: Path
    args: List[str] = field(default_factory=list)
    sends: List[bytes] = field(default_factory=list)
    expected: List[Any] = field(default_factory=list)
    expected_lines: List[int] = field(default_factory=list)  # source line numbers of the `<` lines
    framing: str = "newline"


def parse_transcript(path: Path, data: Optional[bytes] = None) -> Transcript:
    t = Transcript(path)
    raw_bytes = path.read_bytes() if data is None else data
    for number, raw in enumerate(raw_bytes.split(b"\n"), start=1):
        where = f"{path.name}:{number}"
        if not raw.strip(b" \t"):
            continue
        if raw.startswith(b"#!"):
            name, colon, value = raw[2:].decode("utf-8").partition(":")
            if (
                name.strip() == "framing"
                and colon
                and value.strip() in ("newline", "content-length")
            ):
                t.framing = value.strip()
            elif name.strip() != "args" or not colon:
                raise AssertionError(
                    f"{where}: unknown directive {raw[:60]!r} (only '#! args:', '#! framing:')"
                )
            else:
                t.args += value.split()
        elif raw.startswith(b"#"):
            continue
        elif raw.startswith(b"> ") or raw == b">":
            t.sends.append(raw[2:])
        elif raw.startswith(b"< "):
            try:
                t.expected.append(json.loads(raw[2:].decode("utf-8")))
            except ValueError as exc:
                raise AssertionError(f"{where}: expected reply is not JSON: {exc}") from None
            t.expected_lines.append(number)
        else:
            raise AssertionError(
                f"{where}: a line must be blank or start with '> ', '< ', '#': {raw[:80]!r}"
            )
    return t


#: The cases every transcript parser must agree on (Protocol/README.md, "Transcript format").
FORMAT_CASES = json.loads(
    (TRANSCRIPTS_DIR.parent / "tests" / "transcript-format.json").read_text("utf-8")
)


@pytest.mark.parametrize("line", FORMAT_CASES["malformed"])
def test_a_malformed_transcript_line_is_an_error(line: str) -> None:
    with pytest.raises(AssertionError):
        parse_transcript(Path("bad.txt"), b"> {}\n" + line.encode() + b"\n")


def test_the_transcript_format() -> None:
    good = FORMAT_CASES["good"]
    t = parse_transcript(Path("good.txt"), good["text"].encode())
    assert t.args == good["args"]
    assert t.sends == [s.encode() for s in good["sends"]]
    assert t.expected == good["expected"]


def test_transcripts_exist() -> None:
    assert TRANSCRIPTS, (
        f"no transcripts found in {TRANSCRIPTS_DIR} (expected Protocol/transcripts/*.txt)"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "path", TRANSCRIPTS or [None], ids=[p.name for p in TRANSCRIPTS] or ["none"]
)
def test_transcript(binary: str, path: Optional[Path]) -> None:
    assert path is not None, f"no transcripts found in {TRANSCRIPTS_DIR}"
    t = parse_transcript(path)
    assert t.sends, f"{path.name}: no '>' lines"
    if t.framing == "content-length":
        stdin = b"".join(b"Content-Length: %d\r\n\r\n" % len(s) + s for s in t.sends)
    else:
        stdin = b"".join(line + b"\n" for line in t.sends)
    proc = subprocess.run(
        [binary, *BASE_ARGS, *t.args],
        input=stdin,
        capture_output=True,
        env=server_env(),
        timeout=45,
    )
    stderr = proc.stderr.decode("utf-8", "replace")[-4000:]
    out_lines = (
        [*_header_bodies(proc.stdout), b""]
        if t.framing == "content-length"
        else proc.stdout.split(b"\n")
    )
    assert out_lines[-1] == b"", (
        f"{path.name}: stdout does not end with a newline: {proc.stdout[-200:]!r}"
    )
    actual: List[Any] = []
    for i, line in enumerate(out_lines[:-1], start=1):
        try:
            actual.append(json.loads(line.decode("utf-8")))
        except ValueError:
            pytest.fail(
                f"{path.name}: stdout line {i} is not JSON: {line[:300]!r}\nstderr:\n{stderr}"
            )
    for i, (got, want) in enumerate(zip(actual, t.expected)):
        assert got == want, (
            f"{path.name}: reply #{i + 1} (transcript line {t.expected_lines[i]}) differs\n"
            f"  expected: {json.dumps(want, ensure_ascii=False)}\n"
            f"  actual:   {json.dumps(got, ensure_ascii=False)}\nstderr:\n{stderr}"
        )
    assert len(actual) == len(t.expected), (
        f"{path.name}: expected {len(t.expected)} replies, got {len(actual)}\n"
        + "".join(
            f"  extra: {json.dumps(x, ensure_ascii=False)}\n" for x in actual[len(t.expected) :]
        )
        + f"stderr:\n{stderr}"
    )
    # Only death by a signal fails here; the exit status itself is not part of the format.
    assert proc.returncode >= 0, (
        f"{path.name}: server died by signal {-proc.returncode}\nstderr:\n{stderr}"
    )


def _header_bodies(out: bytes) -> List[bytes]:
    """The bodies of a stream of `Content-Length: N\\r\\n\\r\\n` messages."""
    bodies: List[bytes] = []
    while out:
        head, sep, rest = out.partition(b"\r\n\r\n")
        assert sep and head.startswith(b"Content-Length: "), f"not a header: {out[:80]!r}"
        length = int(head[len(b"Content-Length: ") :])
        assert len(rest) >= length, f"a body is cut short: {out[:80]!r}"
        bodies.append(rest[:length])
        out = rest[length:]
    return bodies
