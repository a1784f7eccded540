"""`push-outbox verify`, `dump`, `ack` and `release` over the real binary (issue 19 items 1-3).

verify and dump read the store without the lock and change nothing: every file keeps its bytes and
its mtime, and no file appears (not LOCK, not quarantine/). verify counts what `status` counts, names
the file and byte of a damaged record, and on a store a live server holds reports the tail being
written as `liveTail`, not as damage. dump prints what `flushPending` would hand out."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PUSH_OUTBOX_BIN", str(ROOT / ".build" / "debug" / "push-outbox"))


def clean_env() -> Dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}


def run(args: List[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([BINARY, *args], capture_output=True, timeout=120, env=clean_env())


class Server:
    """A push-outbox serving JSON-RPC on pipes; `call` sends one request and reads its reply."""

    def __init__(self, store: Path, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [BINARY, "--store", str(store), *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=clean_env(),
        )
        self.next_id = 0
        self.lock = threading.Lock()

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        with self.lock:
            self.next_id += 1
            request = {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": method,
                "params": params or {},
            }
            assert self.proc.stdin and self.proc.stdout
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            reply = json.loads(self.proc.stdout.readline())
        assert "result" in reply, reply
        return reply["result"]

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


def fill(store: Path) -> Tuple[List[str], Dict[str, Any]]:
    """Saves items of every kind, one without a user (a usersTrack flush dead-letters it), and takes a
    lease of 3 items; returns the ids still pending and unleased in seq order, and `status`."""
    box = Server(store)
    ids: List[str] = []
    for n in range(12):
        user = {"externalId": f"u{n}"}
        if n % 3 == 0:
            ids.append(box.call("saveCustomEvent", {"name": f"e{n}", "user": user})["id"])
        elif n % 3 == 1:
            ids.append(
                box.call("saveCustomAttribute", {"key": "k", "value": n, "user": user})["id"]
            )
        else:
            ids.append(
                box.call("saveUserAttribute", {"field": "first_name", "value": "A", "user": user})[
                    "id"
                ]
            )
    box.call("saveCustomEvent", {"name": "nobody"})  # no user: becomes a dead letter below
    skipped = box.call("flushPending", {"format": "usersTrack", "leaseMs": 600_000})
    assert len(skipped["skipped"]) == 1
    box.call("releaseFlush", {"flushId": skipped["flushId"]})
    lease = box.call("flushPending", {"max": 3, "leaseMs": 600_000})
    leased = [item["id"] for item in lease["items"]]
    assert leased == ids[:3]
    status = box.call("status")
    box.close()
    return ids[3:], status


def listing(store: Path) -> Dict[str, Tuple[str, int]]:
    """Every file under the store with its sha256 and st_mtime_ns (directories too, by mtime)."""
    out: Dict[str, Tuple[str, int]] = {}
    for path in sorted(store.rglob("*")) + [store]:
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(store))] = (digest, info.st_mtime_ns)
    return out


def verify(store: Path) -> Tuple[int, Dict[str, Any]]:
    done = run(["verify", "--store", str(store)])
    [line] = done.stdout.decode().splitlines()
    return done.returncode, json.loads(line)


def segments(store: Path) -> List[Path]:
    return sorted(store.glob("segment.*"))


def record_offsets(path: Path) -> List[int]:
    data = path.read_bytes()
    offsets, at = [], 16
    while at + 17 <= len(data):
        offsets.append(at)
        (length,) = struct.unpack_from("<I", data, at)
        at += 17 + length
    return offsets


def test_verify_on_a_healthy_store_counts_what_status_counts(tmp_path: Path) -> None:
    store = tmp_path / "s"
    _, status = fill(store)
    code, report = verify(store)
    assert code == 0, report
    assert report["ok"] is True and report["problems"] == []
    assert report["items"] == status["pending"]["total"] == 12
    assert report["deadLetters"] == status["deadLetters"] == 1
    assert report["leases"] == 1
    assert report["segments"] == len(segments(store)) >= 1
    assert (
        report["bytes"]
        == sum(p.stat().st_size for p in segments(store))
        + (store / "checkpoint.json").stat().st_size
    )


def test_verify_names_the_file_and_offset_of_a_flipped_byte(tmp_path: Path) -> None:
    store = tmp_path / "s"
    fill(store)
    segment = segments(store)[0]
    offsets = record_offsets(segment)
    target = offsets[2]
    data = bytearray(segment.read_bytes())
    data[target + 17 + 5] ^= 0x40  # a byte in the third record's payload
    segment.write_bytes(bytes(data))
    before = listing(store)
    code, report = verify(store)
    assert code == 1, report
    assert report["ok"] is False
    assert {"file": segment.name, "offset": target} == {
        k: report["problems"][0][k] for k in ("file", "offset")
    }, report["problems"]
    assert "checksum" in report["problems"][0]["reason"]
    assert listing(store) == before  # nothing quarantined, nothing cut


def test_verify_reports_a_truncated_checkpoint(tmp_path: Path) -> None:
    store = tmp_path / "s"
    fill(store)
    checkpoint = store / "checkpoint.json"
    checkpoint.write_bytes(checkpoint.read_bytes()[:40])
    before = listing(store)
    code, report = verify(store)
    assert code == 1, report
    assert [p["file"] for p in report["problems"]] == ["checkpoint.json"], report
    assert listing(store) == before


def test_verify_and_dump_change_nothing_and_create_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s"
    fill(store)
    (store / "LOCK").unlink()  # even with no LOCK there, none is created
    before = listing(store)
    time.sleep(0.02)
    assert verify(store)[0] == 0
    for args in ([], ["--dead-letters"], ["--format", "usersTrack"]):
        assert run(["dump", "--store", str(store), *args]).returncode == 0
    assert listing(store) == before
    assert not (store / "LOCK").exists() and not (store / "quarantine").exists()


def test_dump_prints_what_flush_pending_would_hand_out(tmp_path: Path) -> None:
    store = tmp_path / "s"
    model, _ = fill(store)
    dumped = [
        json.loads(line)
        for line in run(["dump", "--store", str(store)]).stdout.decode().splitlines()
    ]
    assert [item["id"] for item in dumped] == model
    dead = [
        json.loads(line)
        for line in run(["dump", "--store", str(store), "--dead-letters"]).stdout.splitlines()
    ]
    assert [(d["reason"], d["item"]["name"]) for d in dead] == [("no_identifier", "nobody")]
    bodies = (
        run(["dump", "--store", str(store), "--format", "usersTrack"]).stdout.decode().splitlines()
    )
    box = Server(store)
    flushed = box.call("flushPending", {})
    box.close()
    assert dumped == flushed["items"]  # the same objects, byte for byte in JSON terms
    assert bodies and all(json.loads(b).keys() >= {"attributes", "events"} for b in bodies)


def test_verify_on_a_live_servers_store_reports_no_damage(tmp_path: Path) -> None:
    store = tmp_path / "s"
    box = Server(store, "--snapshot-interval", "0.05")
    stop = threading.Event()

    def saving() -> None:
        n = 0
        while not stop.is_set():
            box.call(
                "saveCustomEvent",
                {"name": f"live{n}", "user": {"externalId": "u"}, "properties": {"n": n}},
            )
            n += 1

    writer = threading.Thread(target=saving)
    writer.start()
    try:
        time.sleep(0.3)
        for _ in range(8):
            code, report = verify(store)
            assert code == 0, report
            assert report["problems"] == [] and report["livePid"] == box.proc.pid
            assert run(["dump", "--store", str(store)]).returncode == 0
            time.sleep(0.05)
        # A torn last record in the newest segment while the server holds LOCK: a live tail.
        # (The saves stop first: the server appends after whatever is there.)
        stop.set()
        writer.join()
        newest = segments(store)[-1]
        with open(newest, "ab") as f:
            f.write(b"\x40\x00\x00\x00\x01\x02")
        code, report = verify(store)
        assert code == 0, report
        assert report["liveTail"]["file"] == newest.name and report["problems"] == []
    finally:
        stop.set()
        writer.join()
        box.proc.kill()
        box.proc.wait()


def test_a_torn_tail_with_no_live_server_is_damage(tmp_path: Path) -> None:
    store = tmp_path / "s"
    fill(store)
    newest = segments(store)[-1]
    size = newest.stat().st_size
    with open(newest, "ab") as f:
        f.write(b"\x40\x00\x00\x00\x01\x02")
    code, report = verify(store)
    assert code == 1 and report["liveTail"] is None
    assert report["problems"][0]["file"] == newest.name and report["problems"][0]["offset"] == size


def lease(store: Path, ms: int) -> str:
    done = run(["flush", "--store", str(store), "--lease", str(ms), "--max", "2"])
    assert done.returncode == 0, done.stderr.decode()
    [flush_id] = [
        line.split()[1] for line in done.stderr.decode().splitlines() if line.startswith("flushId ")
    ]
    return flush_id


def test_ack_and_release_exit_codes(tmp_path: Path) -> None:
    store = tmp_path / "s"
    box = Server(store)
    for n in range(6):
        box.call("saveCustomEvent", {"name": f"e{n}", "user": {"externalId": f"u{n}"}})
    box.close()
    unknown = run(["ack", "--store", str(store), "no-such-lease"])
    assert unknown.returncode == 1 and "unknown" in unknown.stderr.decode()
    assert run(["release", "--store", str(store), "no-such-lease"]).returncode == 1
    first = lease(store, 600_000)
    released = run(["release", first, "--store", str(store)])
    assert released.returncode == 0, released.stderr.decode()
    assert (
        run(["ack", "--store", str(store), first]).returncode == 1
    )  # released: no longer a live lease
    second = lease(store, 600_000)
    acked = run(["ack", "--store", str(store), second])
    assert acked.returncode == 0 and "2 items acked" in acked.stderr.decode(), acked.stderr.decode()
    assert verify(store)[1]["items"] == 4
    third = lease(store, 1)
    time.sleep(0.05)
    expired = run(["ack", "--store", str(store), third])
    assert expired.returncode == 1 and "expired" in expired.stderr.decode(), expired.stderr.decode()
    assert verify(store)[1]["items"] == 4  # the expired lease's items are pending again
    assert run(["ack", "--store", str(store)]).returncode == 2  # no FLUSHID: usage


def test_verify_reports_a_segment_the_checkpoint_lists_that_is_missing(tmp_path: Path) -> None:
    store = tmp_path / "s"
    fill(store)
    [segment] = segments(store)
    segment.unlink()
    code, report = verify(store)
    assert code == 1, report
    files = {p["file"] for p in report["problems"]}
    assert segment.name in files and "checkpoint.json" in files, report["problems"]
    assert not (store / "quarantine").exists()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_verify_reports_a_checkpoint_that_counts_items_no_segment_holds(tmp_path: Path) -> None:
    store = tmp_path / "s"
    fill(store)
    path = store / "checkpoint.json"
    header = json.loads(path.read_bytes().split(b"\n")[0])
    header["items"] += (
        5  # a well-formed checkpoint (its checksum matches) that counts 5 items too many
    )
    line = json.dumps(header, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(line + b'{"end":true,"crc32c":%d}\n' % crc32c(line))
    code, report = verify(store)
    assert code == 1, report
    [problem] = report["problems"]
    assert problem["file"] == "checkpoint.json" and "counts" in problem["reason"], problem
