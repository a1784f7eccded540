"""Measures how long `status` takes while a `deliverPending` pass waits on a slow Braze (issue 18):
a stub that answers every request in 3 s, one pass sent, then `status` calls one after another,
each timed from its write to its reply. Prints p50 and max over the calls. A measurement, never a
test: it prints and exits 0.

    python3 Tests/delivery/status_latency.py [--binary BIN] [--calls 100] [--stall 3]

Run it with the binary before a change and after (--binary) to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from braze_stub import BrazeStub, Reply  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--binary", default=os.environ.get("PUSH_OUTBOX_BIN", str(root / ".build/debug/push-outbox")))
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--stall", type=float, default=3.0, help="seconds the stub takes to answer")
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between status calls")
    args = parser.parse_args()

    stub = BrazeStub().start()
    stub.responder = lambda body: Reply(stall=args.stall)
    with tempfile.TemporaryDirectory(prefix="push-outbox-latency-") as root_dir:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}
        env["BRAZE_API_KEY"] = "latency-key"
        proc = subprocess.Popen(
            [args.binary, "--store", f"{root_dir}/store", "--braze-endpoint", stub.url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
        )
        assert proc.stdin and proc.stdout

        def send(message: dict) -> None:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()

        def reply_to(id_: object) -> dict:
            while True:
                message = json.loads(proc.stdout.readline())
                if message.get("id") == id_:
                    return message
                replies[message.get("id")] = message

        replies: dict = {}
        for n in range(8):
            send({"jsonrpc": "2.0", "id": f"s{n}", "method": "saveCustomEvent",
                  "params": {"name": "e", "user": {"externalId": f"u{n}"}}})
            reply_to(f"s{n}")
        pass_sent = time.monotonic()
        send({"jsonrpc": "2.0", "id": "pass", "method": "deliverPending"})
        while not stub.requests:  # the pass is waiting on Braze
            time.sleep(0.005)
        latencies = []
        during = 0
        for n in range(args.calls):
            time.sleep(args.gap)
            start = time.monotonic()
            send({"jsonrpc": "2.0", "id": n, "method": "status"})
            reply_to(n)
            latencies.append(time.monotonic() - start)
            during += "pass" not in replies
        if "pass" not in replies:
            reply_to("pass")
        pass_ms = (time.monotonic() - pass_sent) * 1000
        proc.stdin.close()
        proc.wait(timeout=60)
    stub.stop()
    ms = sorted(x * 1000 for x in latencies)
    print(f"binary: {args.binary}")
    print(f"stub answers in {args.stall} s; pass answered after {pass_ms:.0f} ms")
    print(f"status calls: {len(ms)} ({during} answered before the pass ended)")
    print(f"status latency: p50 {statistics.median(ms):.2f} ms, max {ms[-1]:.2f} ms")


if __name__ == "__main__":
    main()
