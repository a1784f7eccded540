"""Replay every Protocol/transcripts/*.txt against the real binary.

Transcript format (one directive per line):
  > RAW        send RAW verbatim (everything after "> "; a bare ">" sends an empty line)
  < JSON       expected reply, compared as parsed JSON (deep equality, order of lines kept)
  #! args: A B extra command-line arguments (shell-style split); may repeat
  #! exit: N   (optional) expected exit status; by default only death by signal fails
  # ...        comment;  blank lines are ignored

The binary runs with ``--memory --fixed-clock 2026-01-01T00:00:00.000Z --id-seed 1``
plus the extra args; all ``>`` lines are written, stdin is closed, and the full
list of stdout lines must equal the list of ``<`` lines (so a notification that
must not answer is checked by the absence of a line).
"""

from __future__ import annotations

import json
import shlex
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
    exit_code: Optional[int] = None


def parse_transcript(path: Path) -> Transcript:
    t = Transcript(path)
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        # `>` lines are sent byte for byte (a CR before the LF included); JSON and
        # directives tolerate a trailing CR anyway.
        if raw.startswith(b"#!"):
            directive = raw[2:].decode("utf-8").strip()
            name, _, value = directive.partition(":")
            name = name.strip()
            if name == "args":
                t.args += shlex.split(value)
            elif name == "exit":
                t.exit_code = int(value.strip())
            else:
                raise AssertionError(f"{path.name}:{number}: unknown directive {directive!r}")
        elif raw.startswith(b"#") or not raw.strip():
            continue
        elif raw.startswith(b"> ") or raw == b">":
            t.sends.append(raw[2:])
        elif raw.startswith(b"< ") or raw == b"<":
            text = raw[2:].decode("utf-8")
            try:
                t.expected.append(json.loads(text))
            except ValueError as exc:
                raise AssertionError(f"{path.name}:{number}: expected reply is not JSON: {exc}") from None
            t.expected_lines.append(number)
        else:
            raise AssertionError(f"{path.name}:{number}: line must start with '>', '<', '#' or be blank: {raw[:80]!r}")
    return t


def test_transcripts_exist() -> None:
    assert TRANSCRIPTS, f"no transcripts found in {TRANSCRIPTS_DIR} (expected Protocol/transcripts/*.txt)"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", TRANSCRIPTS or [None], ids=[p.name for p in TRANSCRIPTS] or ["none"])
def test_transcript(binary: str, path: Optional[Path]) -> None:
    assert path is not None, f"no transcripts found in {TRANSCRIPTS_DIR}"
    t = parse_transcript(path)
    assert t.sends, f"{path.name}: no '>' lines"
    stdin = b"".join(line + b"\n" for line in t.sends)
    proc = subprocess.run(
        [binary, *BASE_ARGS, *t.args],
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        timeout=45,
    )
    stderr = proc.stderr.decode("utf-8", "replace")[-4000:]
    out_lines = proc.stdout.split(b"\n")
    assert out_lines[-1] == b"", f"{path.name}: stdout does not end with a newline: {proc.stdout[-200:]!r}"
    actual: List[Any] = []
    for i, line in enumerate(out_lines[:-1], start=1):
        try:
            actual.append(json.loads(line.decode("utf-8")))
        except ValueError:
            pytest.fail(f"{path.name}: stdout line {i} is not JSON: {line[:300]!r}\nstderr:\n{stderr}")
    for i, (got, want) in enumerate(zip(actual, t.expected)):
        assert got == want, (
            f"{path.name}: reply #{i + 1} (transcript line {t.expected_lines[i]}) differs\n"
            f"  expected: {json.dumps(want, ensure_ascii=False)}\n"
            f"  actual:   {json.dumps(got, ensure_ascii=False)}\nstderr:\n{stderr}"
        )
    assert len(actual) == len(t.expected), (
        f"{path.name}: expected {len(t.expected)} replies, got {len(actual)}\n"
        + "".join(f"  extra: {json.dumps(x, ensure_ascii=False)}\n" for x in actual[len(t.expected):])
        + f"stderr:\n{stderr}"
    )
    if t.exit_code is not None:
        assert proc.returncode == t.exit_code, f"{path.name}: exit {proc.returncode}\nstderr:\n{stderr}"
    else:
        assert proc.returncode >= 0, f"{path.name}: server died by signal {-proc.returncode}\nstderr:\n{stderr}"
