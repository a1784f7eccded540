"""Relay throughput (issue 20): realistic saves onto a fresh store, then `push-outbox relay` of the
whole backlog into a local `nats-server -js` (127.0.0.1, file storage, a fresh stream each run).
Then the same saves into a serving `push-outbox --store DIR --relay URL` (a fresh store and stream):
the saves' rate while it relays, and the relay's (spawn to `status.relay.published` = all).
Prints items/s and the ratios to --store saves. Never fails on a time.

    python Tests/bench/relay.py --binary "$(bash .ci/build-static)" --items 200000 --runs 3
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inputs  # noqa: E402
import procs  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nats(root):
    port = free_port()
    exe = shutil.which("nats-server") or os.path.join(sys.prefix, "bin", "nats-server")
    proc = subprocess.Popen(
        [exe, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", os.path.join(root, "js")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"nats://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nats-server did not start")


def serving_relay(binary, store, url, saves, count):
    """Seconds from spawn to the last save's reply, and to every item published (status polled)."""
    proc = subprocess.Popen(
        [binary, "--store", store, "--relay", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    start = time.perf_counter()
    lock = threading.Lock()  # the writer thread and the status polls share stdin

    def feed():
        with open(saves, "rb") as src:
            for chunk in iter(lambda: src.read(1 << 16), b""):
                with lock:
                    proc.stdin.write(chunk)
        with lock:
            proc.stdin.flush()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    replies, saved_at, published = 0, None, 0
    while published < count:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("the serving process ended early")
        if b'"relay":{' in line:
            published = json.loads(line)["result"]["relay"]["published"]
            if published < count:
                time.sleep(0.01)
                with lock:
                    proc.stdin.write(b'{"jsonrpc":"2.0","id":"s","method":"status"}\n')
                    proc.stdin.flush()
            continue
        replies += 1
        if replies == count:
            saved_at = time.perf_counter() - start
            writer.join()
            with lock:
                proc.stdin.write(b'{"jsonrpc":"2.0","id":"s","method":"status"}\n')
                proc.stdin.flush()
    relayed_at = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    return saved_at, relayed_at


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="push-outbox-bench-relay-")
    try:
        lines = inputs.write(os.path.join(work, "saves.jsonl"), inputs.mixed_lines(args.items * 2))
        # mixed_lines puts a flushPending among the saves; keep only the saves.
        saves = os.path.join(work, "only-saves.jsonl")
        count = 0
        with open(lines, encoding="utf-8") as src, open(saves, "w", encoding="utf-8") as dst:
            for line in src:
                if '"flushPending"' in line:
                    continue
                dst.write(line)
                count += 1
                if count == args.items:
                    break
        save_rates, relay_rates = [], []
        for run in range(args.runs):
            store = os.path.join(work, f"store{run}")
            secs, _ = procs.throughput([args.binary, "--store", store], saves, count)
            save_rates.append(count / secs)
            nats, url = start_nats(os.path.join(work, f"nats{run}"))
            try:
                start = time.perf_counter()
                out = subprocess.run(
                    [args.binary, "relay", "--to", url, "--store", store],
                    capture_output=True,
                    text=True,
                )
                secs = time.perf_counter() - start
                if out.returncode != 0:
                    raise SystemExit("relay failed: " + out.stderr)
                relay_rates.append(count / secs)
                print(
                    f"run {run + 1}: saves {save_rates[-1]:,.0f}/s, relay {relay_rates[-1]:,.0f}/s — {out.stderr.strip()}"
                )
            finally:
                nats.send_signal(signal.SIGTERM)
                nats.wait()
        save = sorted(save_rates)[len(save_rates) // 2]
        relay = sorted(relay_rates)[len(relay_rates) // 2]
        print(
            f"{count:,} items, median of {args.runs}: --store saves {save:,.0f} items/s; relay into local JetStream "
            f"{relay:,.0f} items/s; ratio relay/saves {relay / save:.3f}"
        )
        serving_saves, serving_relay_rates = [], []
        for run in range(args.runs):
            nats, url = start_nats(os.path.join(work, f"serving-nats{run}"))
            try:
                saved_at, relayed_at = serving_relay(
                    args.binary, os.path.join(work, f"serving{run}"), url, saves, count
                )
            finally:
                nats.send_signal(signal.SIGTERM)
                nats.wait()
            serving_saves.append(count / saved_at)
            serving_relay_rates.append(count / relayed_at)
            print(
                f"serving run {run + 1}: saves answered {serving_saves[-1]:,.0f}/s while relaying; "
                f"all relayed at {serving_relay_rates[-1]:,.0f} items/s"
            )
        ss = sorted(serving_saves)[len(serving_saves) // 2]
        sr = sorted(serving_relay_rates)[len(serving_relay_rates) // 2]
        print(
            f"--relay while serving, median of {args.runs}: saves {ss:,.0f} items/s ({ss / save:.3f} of --store); "
            f"relay {sr:,.0f} items/s ({sr / save:.3f} of --store saves)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
