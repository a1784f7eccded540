"""Reading and crafting store files: format-2 segments and checkpoint, format-1 journals, CRC-32C,
and small helpers over a store directory. Re-exported by conftest.py."""

from __future__ import annotations

import json
import shutil
import struct
import time
from pathlib import Path
from typing import Any, Callable, Iterable

# ---------------------------------------------------------------------------------------------
# Store files
# ---------------------------------------------------------------------------------------------

JOURNAL_HEADER = 16
RECORD_HEADER = 17


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class Record:
    def __init__(self, offset: int, end: int, type: int, seq: int, payload: bytes) -> None:
        self.offset, self.end, self.type, self.seq, self.payload = offset, end, type, seq, payload

    def __repr__(self) -> str:
        return f"Record(type={self.type}, seq={self.seq}, {self.offset}..{self.end})"


# Format 2 record types (segment.*); format 1 (journal.*) used 1 = item, 2 = removal.
ITEM, REMOVE, LEASE, LEASE_END = 16, 17, 18, 19
SEGMENT_PREFIX = "segment."


def segment_version(path: Path) -> int:
    data = path.read_bytes()[:16]
    assert data[:8] == b"POUTJRNL", f"{path.name}: bad magic {data[:8]!r}"
    return struct.unpack_from("<I", data, 8)[0]


def read_segment(path: Path, version: int | None = None) -> list[Record]:
    """Parses a segment (format 2, `segment.*`) or a format-1 journal (`journal.*`), checking the
    header and every record's CRC-32C. Both formats share the record framing:
    u32 length | u32 crc32c | u8 type | u64 seq | payload, the CRC covering type, seq and payload."""
    data = path.read_bytes()
    assert data[:8] == b"POUTJRNL", f"{path.name}: bad magic {data[:8]!r}"
    want = version if version is not None else (1 if path.name.startswith("journal.") else 2)
    assert struct.unpack_from("<I", data, 8)[0] == want, f"{path.name}: header version is not {want}"
    records = []
    off = JOURNAL_HEADER
    while off < len(data):
        length, crc = struct.unpack_from("<II", data, off)
        end = off + RECORD_HEADER + length
        assert end <= len(data), f"{path.name}: record at {off} runs past the end"
        assert crc32c(data[off + 8 : end]) == crc, f"{path.name}: CRC mismatch at {off}"
        rtype = data[off + 8]
        seq = struct.unpack_from("<Q", data, off + 9)[0]
        records.append(Record(off, end, rtype, seq, data[off + RECORD_HEADER : end]))
        off = end
    return records


def item_payload(record: Record) -> dict:
    """The fixed fields of a format-2 item record and its JSON body."""
    p = record.payload
    saved_at, deliveries, kind, flags, id_length = struct.unpack_from("<qIBBB", p, 0)
    at = 15
    if id_length == 0:
        raw_id, at = p[at : at + 16], at + 16
    else:
        raw_id, at = p[at : at + id_length], at + id_length
    return {"savedAt": saved_at, "deliveryCount": deliveries, "kind": kind, "flags": flags, "id": raw_id, "body": p[at:]}


def segments(store: Path) -> list[Path]:
    """The format-2 log segments, oldest first."""
    return sorted(p for p in store.iterdir() if p.name.startswith(SEGMENT_PREFIX) and len(p.name) == 28)


def segment_name(first: int) -> str:
    return f"{SEGMENT_PREFIX}{first:020d}"


def journals_v1(store: Path) -> list[Path]:
    """Format-1 journal segments."""
    return sorted(p for p in store.iterdir() if p.name.startswith("journal.") and len(p.name) == 28)


CHECKPOINT = "checkpoint.json"


def read_checkpoint(store: Path) -> dict:
    """The checkpoint's header object, after checking its two-line shape and the trailer's CRC-32C."""
    data = (store / CHECKPOINT).read_bytes()
    lines = data.split(b"\n")
    assert len(lines) == 3 and lines[2] == b"", f"checkpoint is not two lines: {data[:200]!r}"
    header, trailer = json.loads(lines[0]), json.loads(lines[1])
    assert trailer == {"end": True, "crc32c": crc32c(lines[0] + b"\n")}, trailer
    assert header["format"] == "push-outbox-checkpoint" and header["version"] == 2, header
    return header


def checkpoint_bytes(header_line: bytes) -> bytes:
    """A checkpoint file with `header_line` (no newline) and a trailer whose CRC is valid."""
    line = header_line + b"\n"
    return line + b'{"end":true,"crc32c":' + str(crc32c(line)).encode() + b"}\n"


def files_containing(store: Path, marker: bytes) -> list[str]:
    """Every regular file under `store` whose bytes contain `marker` (symlinks are not followed)."""
    out = []
    for path in store.rglob("*"):
        if path.is_file() and not path.is_symlink() and marker in path.read_bytes():
            out.append(str(path.relative_to(store)))
    return sorted(out)


def poll(condition: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Calls `condition` until it returns something truthy or `timeout` seconds pass; returns the
    last value. A bound for waiting, never a measured assertion."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def tree(store: Path, skip: Iterable[str] = ()) -> dict[str, bytes]:
    """Every regular file under `store` (relative path -> bytes)."""
    skip = set(skip)
    out = {}
    for path in sorted(store.rglob("*")):
        rel = str(path.relative_to(store))
        if path.is_file() and rel not in skip:
            out[rel] = path.read_bytes()
    return out


def quarantined(store: Path, prefix: str) -> list[Path]:
    q = store / "quarantine"
    return sorted(p for p in q.iterdir() if p.name.startswith(prefix + ".")) if q.is_dir() else []


def copy_store(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def error_lines(stdout: bytes) -> list[dict]:
    out = []
    for raw in stdout.splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            out.append({"unparsable": raw})
    return out
