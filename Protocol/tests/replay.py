#!/usr/bin/env python3
"""Replay golden transcripts against the push-outbox binary and print a diff.

Standard library only. Usage (from the repository root):

    python3 Protocol/tests/replay.py Protocol/transcripts/basic.txt
    python3 Protocol/tests/replay.py Protocol/transcripts/*.txt
    python3 Protocol/tests/replay.py --fill Protocol/transcripts/basic.txt   # authoring aid

Transcript format (Protocol/README.md, "Golden transcripts"):

    > RAW LINE        sent verbatim (the text after "> "), followed by "\\n"; may be invalid JSON
    < JSON            the next reply line, compared as parsed JSON
    # comment         ignored; "#! args: --flag value" adds command-line arguments;
                      "#! framing: content-length" sends each "> " text as one LSP message
                      (`Content-Length: N\r\n\r\n` + text) and reads the replies the same way
    (blank line)      ignored

Every transcript runs with ``--memory --fixed-clock 2026-01-01T00:00:00.000Z --id-seed 1`` plus its
``#! args:``. Replies are compared strictly: same JSON types (a boolean never equals a number), same
numbers by value, same strings, same members (in any order), same array order, and the same count.

``--fill`` prints the transcript with every ``<`` line replaced by the binary's actual replies, each
placed after the ``>`` line that caused it. Review every reply before accepting it as golden.

The binary is ``--binary PATH``, else ``$PUSH_OUTBOX_BIN``, else ``.build/debug/push-outbox`` or
``.build/release/push-outbox`` in the repository. Exit status: 0 when every transcript matches, 1 on a
mismatch, 2 on a usage or setup error.
"""

from __future__ import annotations

import argparse
import decimal
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
BASE_ARGS = ["--memory", "--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]
DEFAULT_LIMITS = {"--max-line-bytes": 16 * 1024 * 1024, "--max-batch": 10_000, "--max-depth": 128}


# MARK: - Transcripts


@dataclass
class Line:
    kind: str  # ">", "<"
    text: str
    lineno: int


@dataclass
class Transcript:
    path: Path
    args: List[str] = field(default_factory=list)
    lines: List[Line] = field(default_factory=list)
    framing: str = "newline"  # or "content-length" ("#! framing:")

    @property
    def sent(self) -> List[Line]:
        return [ln for ln in self.lines if ln.kind == ">"]

    @property
    def expected(self) -> List[Line]:
        return [ln for ln in self.lines if ln.kind == "<"]

    def input_bytes(self) -> bytes:
        if self.framing == "content-length":
            return b"".join(header_framed(ln.text.encode("utf-8")) for ln in self.sent)
        return b"".join(ln.text.encode("utf-8") + b"\n" for ln in self.sent)

    def limit(self, flag: str) -> int:
        """The value of a numeric flag in ``#! args:``, or the server default."""
        value = DEFAULT_LIMITS[flag]
        args = self.args
        for n, arg in enumerate(args):
            if arg == flag and n + 1 < len(args):
                value = int(args[n + 1])
            elif arg.startswith(flag + "="):
                value = int(arg.split("=", 1)[1])
        return value


def read_transcript(path: Path) -> Transcript:
    """Reads the one transcript format (Protocol/README.md, "Transcript format"); any other line is an error."""
    return parse_transcript(path.read_bytes().decode("utf-8"), path)


def parse_transcript(text: str, path: Path = Path("transcript")) -> Transcript:
    transcript = Transcript(path=path)
    # Split on "\n" only: str.splitlines() would also split on U+2028, U+0085 and friends.
    for n, raw in enumerate(text.split("\n"), start=1):
        where = f"{path}:{n}"
        if raw.strip(" \t") == "":
            continue
        if raw.startswith("#!"):
            name, colon, value = raw[2:].partition(":")
            if name.strip() == "framing" and colon and value.strip() in FRAMINGS:
                transcript.framing = value.strip()
            elif name.strip() != "args" or not colon:
                raise ValueError(
                    f"{where}: unknown directive {raw[:60]!r} (only '#! args:', '#! framing:')"
                )
            else:
                transcript.args += value.split()
        elif raw.startswith("#"):
            continue
        elif raw == ">" or raw.startswith("> "):
            transcript.lines.append(Line(">", raw[2:], n))
        elif raw.startswith("< "):
            try:
                loads(raw[2:])
            except ValueError as exc:
                raise ValueError(f"{where}: expected reply is not JSON: {exc}") from None
            transcript.lines.append(Line("<", raw[2:], n))
        else:
            raise ValueError(
                f"{where}: a line must be blank or start with '> ', '< ', '#': {raw[:60]!r}"
            )
    return transcript


#: The values of "#! framing:".
FRAMINGS = ("newline", "content-length")


def header_framed(body: bytes) -> bytes:
    """One LSP base-protocol message."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def header_messages(out: bytes) -> List[bytes]:
    """The bodies of a stream of Content-Length messages; ValueError on anything else."""
    bodies: List[bytes] = []
    while out:
        head, sep, rest = out.partition(b"\r\n\r\n")
        if not sep or not head.startswith(b"Content-Length: ") or not head[16:].isdigit():
            raise ValueError(f"not a Content-Length header: {out[:60]!r}")
        length = int(head[16:])
        if len(rest) < length:
            raise ValueError(f"a body is cut short: {len(rest)} of {length} bytes")
        bodies.append(rest[:length])
        out = rest[length:]
    return bodies


# MARK: - JSON


class _Object(dict):
    """A parsed JSON object that remembers whether a key appeared twice."""

    duplicate = False


def _pairs(pairs: List[Tuple[str, Any]]) -> _Object:
    obj = _Object()
    for key, value in pairs:
        if key in obj:
            obj.duplicate = True
        obj[key] = value
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str) -> Any:
    """Parses JSON with exact numbers (int or Decimal), rejecting NaN/Infinity, noting duplicate keys."""
    return json.loads(
        text, parse_float=decimal.Decimal, parse_constant=_reject_constant, object_pairs_hook=_pairs
    )


def same(a: Any, b: Any) -> bool:
    """Strict JSON equality: booleans are not numbers; numbers compare by value; objects ignore member order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, decimal.Decimal)) and isinstance(b, (int, decimal.Decimal)):
        return decimal.Decimal(a) == decimal.Decimal(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if type(a) is not type(b):
        return False
    return a == b


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return False
        except UnicodeEncodeError:
            return True
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


# MARK: - Which lines get a reply (the envelope rules of Protocol/README.md)


def member_answered(value: Any) -> bool:
    """True when one request-shaped value (a line, or a batch member) gets a response."""
    if not isinstance(value, dict):
        return True  # -32600
    if getattr(value, "duplicate", False):
        return True  # -32600, id null
    if "id" in value and (isinstance(value["id"], (bool, dict, list))):
        return True  # -32600, id null
    if "method" not in value and ("result" in value or "error" in value):
        return False  # response-shaped input: logged on stderr and ignored
    if value.get("jsonrpc") != "2.0" or not isinstance(value.get("method"), str):
        return True  # -32600
    if "params" in value and not isinstance(value["params"], (dict, list)):
        return True  # -32600
    return "id" in value  # a request is answered; a notification never


def replies_for(text: str, transcript: Transcript) -> int:
    """How many reply lines the server writes for one sent line (0 or 1)."""
    raw = text.encode("utf-8")
    bom = raw.startswith(b"\xef\xbb\xbf")
    if bom:
        raw = raw[3:]
    raw = raw[:-1] if raw.endswith(b"\r") else raw
    if len(raw) > transcript.limit("--max-line-bytes"):
        return 1  # -32700 line_too_long (the limit counts the message, not a BOM or CR)
    if not bom and raw.strip(b" \t\r") == b"" and transcript.framing == "newline":
        return 0  # blank line (a blank Content-Length body is a message: -32700)
    try:
        value = loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return 1  # -32700
    if _has_lone_surrogate(value) or _depth(value) > transcript.limit("--max-depth"):
        return 1  # -32700
    if isinstance(value, list):
        if not value or len(value) > transcript.limit("--max-batch"):
            return 1  # a single -32600
        return 1 if any(member_answered(m) for m in value) else 0
    return 1 if member_answered(value) else 0


# MARK: - Running


def find_binary(explicit: Optional[str] = None) -> Path:
    for candidate in (explicit, os.environ.get("PUSH_OUTBOX_BIN")):
        if candidate:
            if not os.access(candidate, os.X_OK):
                raise FileNotFoundError(f"{candidate}: not an executable push-outbox binary")
            return Path(candidate)
    for build in ("debug", "release"):
        path = ROOT / ".build" / build / "push-outbox"
        if path.exists():
            return path
    raise FileNotFoundError(
        "push-outbox binary not found: run `swift build`, or pass --binary / set PUSH_OUTBOX_BIN"
    )


@dataclass
class Run:
    status: int
    replies: List[str]
    stderr: str


def run(transcript: Transcript, binary: Path, timeout: float = 60) -> Run:
    proc = subprocess.run(
        [str(binary), *BASE_ARGS, *transcript.args],
        input=transcript.input_bytes(),
        capture_output=True,
        timeout=timeout,
    )
    if transcript.framing == "content-length":
        replies = [body.decode("utf-8") for body in header_messages(proc.stdout)]
    else:
        replies = proc.stdout.decode("utf-8").split("\n")
        if replies and replies[-1] == "":
            replies.pop()
    return Run(proc.returncode, replies, proc.stderr.decode("utf-8", "replace"))


def diff(transcript: Transcript, result: Run) -> List[str]:
    """Human-readable differences; empty when the run matches the transcript."""
    problems: List[str] = []
    name = transcript.path.name
    if result.status != 0:
        problems.append(
            f"{name}: exit status {result.status}; stderr: {result.stderr.strip()[-500:]}"
        )
    expected = transcript.expected
    for n, want in enumerate(expected):
        if n >= len(result.replies):
            problems.append(f"{name}:{want.lineno}: reply {n + 1} missing\n  expected: {want.text}")
            continue
        got_text = result.replies[n]
        try:
            got = loads(got_text)
        except ValueError as error:
            problems.append(
                f"{name}:{want.lineno}: reply {n + 1} is not JSON ({error})\n  got:      {got_text}"
            )
            continue
        if not same(got, loads(want.text)):
            problems.append(
                f"{name}:{want.lineno}: reply {n + 1} differs\n  expected: {want.text}\n  got:      {got_text}"
                + "".join(f"\n  {d}" for d in _where(loads(want.text), got))
            )
    for n in range(len(expected), len(result.replies)):
        problems.append(f"{name}: unexpected reply {n + 1}\n  got:      {result.replies[n]}")
    return problems


def _where(want: Any, got: Any, path: str = "$") -> List[str]:
    """The first few paths at which two JSON values differ."""
    if same(want, got):
        return []
    if isinstance(want, dict) and isinstance(got, dict):
        out: List[str] = []
        for key in sorted(set(want) | set(got)):
            if key not in got:
                out.append(f"{path}.{key}: missing")
            elif key not in want:
                out.append(f"{path}.{key}: unexpected {json.dumps(got[key], default=str)}")
            else:
                out += _where(want[key], got[key], f"{path}.{key}")
        return out[:8]
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        out = []
        for n, (w, g) in enumerate(zip(want, got)):
            out += _where(w, g, f"{path}[{n}]")
        return out[:8]
    return [f"{path}: expected {json.dumps(want, default=str)}, got {json.dumps(got, default=str)}"]


def reply_counts(transcript: Transcript) -> List[int]:
    """How many replies each sent line gets: `replies_for`, and none after an `exit` (nothing is read)."""
    counts: List[int] = []
    exited = False
    for ln in transcript.sent:
        counts.append(0 if exited else replies_for(ln.text, transcript))
        try:
            value = loads(ln.text)
        except ValueError:
            continue
        exited = exited or (isinstance(value, dict) and value.get("method") == "exit")
    return counts


def fill(transcript: Transcript, result: Run) -> str:
    """The transcript text with its reply lines replaced by the actual replies."""
    counts = reply_counts(transcript)
    if sum(counts) != len(result.replies):
        raise RuntimeError(
            f"{transcript.path}: predicted {sum(counts)} replies but the binary wrote {len(result.replies)}"
        )
    replies = iter(result.replies)
    per_line = {
        ln.lineno: [next(replies) for _ in range(c)] for ln, c in zip(transcript.sent, counts)
    }
    out: List[str] = []
    for n, raw in enumerate(transcript.path.read_text(encoding="utf-8").split("\n"), start=1):
        if raw.startswith("< "):
            continue
        out.append(raw)
        for reply in per_line.get(n, []):
            out.append("< " + reply)
    return "\n".join(out)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcripts", nargs="+", type=Path)
    parser.add_argument("--binary", help="the push-outbox binary")
    parser.add_argument(
        "--fill", action="store_true", help="print the transcript with the actual replies"
    )
    options = parser.parse_args(argv)
    try:
        binary = find_binary(options.binary)
    except FileNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    failed = 0
    for path in options.transcripts:
        transcript = read_transcript(path)
        result = run(transcript, binary)
        if options.fill:
            sys.stdout.write(fill(transcript, result))
            continue
        problems = diff(transcript, result)
        if problems:
            failed += 1
            print(
                f"FAIL {path} ({len(transcript.expected)} replies expected, {len(result.replies)} received)"
            )
            for problem in problems:
                print(problem)
        else:
            print(f"ok   {path} ({len(transcript.expected)} replies)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
