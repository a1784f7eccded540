"""Relay throughput (issue 20): realistic saves onto a fresh store, then `push-outbox relay` of the
whole backlog into a local `nats-server -js` (127.0.0.1, file storage, a fresh stream each run).
Prints items/s for both and the ratio relay / saves. Never fails on a time.

    python Tests/bench/relay.py --binary "$(bash .ci/build-static)" --items 200000 --runs 3
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
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
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"nats://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nats-server did not start")


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
                out = subprocess.run([args.binary, "relay", "--to", url, "--store", store], capture_output=True, text=True)
                secs = time.perf_counter() - start
                if out.returncode != 0:
                    raise SystemExit("relay failed: " + out.stderr)
                relay_rates.append(count / secs)
                print(f"run {run + 1}: saves {save_rates[-1]:,.0f}/s, relay {relay_rates[-1]:,.0f}/s — {out.stderr.strip()}")
            finally:
                nats.send_signal(signal.SIGTERM)
                nats.wait()
        save = sorted(save_rates)[len(save_rates) // 2]
        relay = sorted(relay_rates)[len(relay_rates) // 2]
        print(f"{count:,} items, median of {args.runs}: --store saves {save:,.0f} items/s; relay into local JetStream "
              f"{relay:,.0f} items/s; ratio relay/saves {relay / save:.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
