"""Issue 17, defects 6 and 7: a stopping signal ends the process within about a second whatever it
waits on (a slow Braze answer, the rate limiter, a reader that never reads), with its summary, and
nothing is lost: requests in flight are abandoned and their items come back."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time

import pytest
from braze_stub import Reply
from conftest import API_KEY, binary

# Seconds: "about a second", with room for a loaded CI machine; the waits cut short last 20 s to 600 s.
PROMPT = 5.0


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}
    return clean | {"BRAZE_API_KEY": API_KEY}


def pending_after(outbox) -> int:
    box = outbox(endpoint=False, env={})
    total = box.result("status")["pending"]["total"]
    box.close()
    return total


@pytest.mark.parametrize("wait", ["slow answer", "rate limiter"])
def test_sigterm_during_deliver_pending_ends_the_server_promptly(stub, outbox, wait):
    box = outbox(endpoint=False, env={})
    for n in range(4):
        box.save_event(f"e{n}", f"u{n}")
    box.close()
    if wait == "slow answer":
        stub.responder = lambda body: Reply(stall=20)
        flags = ["--braze-timeout-ms", "60000"]
    else:
        flags = ["--braze-rate", "1/600", "--track-batch-limit", "1"]
    box = outbox(*flags)
    box.proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"deliverPending"}\n')
    box.proc.stdin.flush()
    for _ in range(200):  # bounded: until the first request reached the stub
        if stub.requests:
            break
        time.sleep(0.01)
    time.sleep(0.3)
    start = time.monotonic()
    box.proc.send_signal(signal.SIGTERM)
    box.proc.wait(timeout=30)
    assert time.monotonic() - start < PROMPT
    delivered = len(stub.accepted_objects())
    assert pending_after(outbox) == 4 - delivered  # the abandoned lease's items are held


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_deliver_one_shot_promptly_with_its_summary(stub, outbox, store_dir, sig):
    box = outbox(endpoint=False, env={})
    box.save_event("e0", "u0")
    box.close()
    stub.responder = lambda body: Reply(stall=20)
    argv = [
        binary(),
        "deliver",
        "--store",
        store_dir,
        "--braze-endpoint",
        stub.url,
        "--braze-timeout-ms",
        "60000",
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env())
    for _ in range(200):
        if stub.requests:
            break
        time.sleep(0.01)
    start = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - start < PROMPT
    assert proc.returncode == 6 and b"stopped by a signal" in err, err  # 6: still pending
    assert pending_after(outbox) == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP])
def test_a_signal_ends_flush_blocked_on_a_reader_that_never_reads(outbox, store_dir, sig):
    box = outbox(endpoint=False, env={})
    for n in range(3000):  # far more than a pipe holds
        box.save_event(f"event-with-a-long-name-{n:05d}", f"user-{n}")
    box.close()
    reader, writer = os.pipe()
    fcntl.fcntl(writer, 1031, 65536 // 4)  # F_SETPIPE_SZ: a size of its own, which flush keeps
    try:
        proc = subprocess.Popen(
            [binary(), "flush", "--store", store_dir],
            stdout=writer,
            stderr=subprocess.PIPE,
            env=env(),
        )
        time.sleep(1.0)  # blocked: nobody reads
        start = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert time.monotonic() - start < PROMPT
    finally:
        os.close(writer)
        os.close(reader)
    assert proc.returncode == 1 and b"stopped by a signal" in err, (proc.returncode, err)
    written = int(err.split(b"push-outbox flush: ")[-1].split(b" lines")[0])
    assert pending_after(outbox) == 3000 - written


def test_a_signal_ends_import_waiting_on_stdin_and_imports_nothing(outbox, store_dir):
    proc = subprocess.Popen(
        [binary(), "import", "--store", store_dir, "-"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    proc.stdin.write(b'{"pending_custom_events":[')  # half a file, then nothing
    proc.stdin.flush()
    time.sleep(0.5)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - start < PROMPT
    assert proc.returncode == 1 and b"stopped by a signal" in err, (proc.returncode, err)
    assert pending_after(outbox) == 0
