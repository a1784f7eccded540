"""The transcript reader in replay.py accepts exactly the format in Protocol/README.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import replay  # noqa: E402

CASES = json.loads((HERE / "transcript-format.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("line", CASES["malformed"])
def test_a_malformed_line_is_an_error(line: str) -> None:
    with pytest.raises(ValueError):
        replay.parse_transcript("> {}\n" + line + "\n")


def test_the_format() -> None:
    good = CASES["good"]
    transcript = replay.parse_transcript(good["text"])
    assert transcript.args == good["args"]
    assert [line.text for line in transcript.sent] == good["sends"]
    assert [replay.loads(line.text) for line in transcript.expected] == good["expected"]
