"""`push-outbox relay` against a NATS server that lies (issue 40 #5-#8), over the real binary and
`fake_nats.FakeNats`: an ack from another stream or with seq 0 stores nothing, a max_payload of 0, -1
or absurd is a protocol error, a flood for a subscription never made stays within a fixed memory
budget, and SIGTERM during the ack wait ends the relay promptly. Every case keeps the items local."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import binary, save_items
from fake_nats import FakeNats


def pending(store: Path) -> Dict[str, Any]:
    """The store's status, read by a fresh process."""
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "status"}) + "\n"
    out = subprocess.run(
        [binary(), "--store", str(store)], input=line, capture_output=True, text=True, timeout=60
    )
    return json.loads(out.stdout.splitlines()[0])["result"]


def start_relay(store: Path, fake: FakeNats, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    return subprocess.Popen(
        [binary(), "relay", "--to", fake.url, "--store", str(store), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def run_relay(store: Path, fake: FakeNats, *extra: str) -> subprocess.CompletedProcess[str]:
    proc = start_relay(store, fake, *extra)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize(
    "answer,said",
    [
        (
            {"stream": "SOMETHING_ELSE", "seq": 7},
            'names the stream "SOMETHING_ELSE", not PUSH_OUTBOX',
        ),
        ({"stream": "PUSH_OUTBOX", "seq": 0}, "has seq 0"),
    ],
    ids=["another-stream", "seq-0"],
)
def test_a_wrong_ack_keeps_every_item_and_fails(
    tmp_path: Path, answer: Dict[str, Any], said: str
) -> None:
    store = tmp_path / "store"
    save_items(store, 3, 5)
    fake = FakeNats(ack=lambda stream, subject, payload: answer)
    try:
        done = run_relay(store, fake, "--max-seconds", "2")
    finally:
        fake.close()
    assert len(fake.published) >= 3  # it did publish
    assert done.returncode != 0, done.stdout + done.stderr
    assert "published 0" in done.stdout + done.stderr, done.stdout + done.stderr
    assert said in done.stdout + done.stderr
    status = pending(store)
    assert status["pending"]["total"] == 3 and status["deadLetters"] == 0


@pytest.mark.parametrize(
    "value", [0, -1, 1 << 40, "1048576"], ids=["zero", "minus-one", "absurd", "string"]
)
def test_a_max_payload_that_is_no_size_is_refused_and_dead_letters_nothing(
    tmp_path: Path, value: Any
) -> None:
    store = tmp_path / "store"
    save_items(store, 3, 6)
    fake = FakeNats(max_payload=value)
    try:
        done = run_relay(store, fake, "--max-seconds", "2")
    finally:
        fake.close()
    assert done.returncode != 0, done.stdout + done.stderr
    assert "max_payload" in done.stdout + done.stderr
    assert fake.published == []
    status = pending(store)
    assert status["pending"]["total"] == 3 and status["deadLetters"] == 0


def peak_rss_mb(pid: int) -> Optional[float]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def test_a_flood_for_a_subscription_never_made_stays_within_a_fixed_budget(tmp_path: Path) -> None:
    """The server never acks and floods MSG for sid 99 meanwhile: the old client queued every one
    (3.3 GB in 8 s); now they are dropped as they arrive."""
    store = tmp_path / "store"
    save_items(store, 3, 7)
    fake = FakeNats(ack=lambda stream, subject, payload: None, flood=True)
    proc = start_relay(store, fake, "--max-seconds", "4")
    peak: List[float] = []
    try:
        while proc.poll() is None:
            rss = peak_rss_mb(proc.pid)
            if rss is not None:
                peak.append(rss)
            time.sleep(0.05)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        fake.close()
    flooded_mb = fake.flood_bytes / 1e6
    print(f"flooded {flooded_mb:.0f} MB; relay's peak RSS {max(peak):.1f} MB")
    assert flooded_mb > 200, "the flood was too small to tell"
    assert max(peak) < 150, f"peak RSS {max(peak):.0f} MB after {flooded_mb:.0f} MB of flood"
    assert proc.returncode != 0
    assert pending(store)["pending"]["total"] == 3


def test_sigterm_during_the_ack_wait_stops_the_relay_promptly(tmp_path: Path) -> None:
    store = tmp_path / "store"
    save_items(store, 3, 8)
    fake = FakeNats(ack=lambda stream, subject, payload: None)
    proc = start_relay(store, fake, "--max-seconds", "60")
    try:
        deadline = time.monotonic() + 20
        while len(fake.published) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(fake.published) >= 3, "the relay never published"
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
        fake.close()
    print(f"SIGTERM to exit: {took:.2f} s")
    assert took < 4, f"{took:.1f} s after SIGTERM (the ack wait ignored it)"
    assert proc.returncode != 0 and "stopped by a signal" in out + err
    assert pending(store)["pending"]["total"] == 3
