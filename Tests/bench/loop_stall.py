#!/usr/bin/env python3
"""How long one big request holds the request loop (issue 18 item 3: a call that stalls the loop
for more than 100 ms should become a long call). Prints, never fails.

For each case it loads the server, then writes the big request and a `status` right behind it in
one write. The stall is the time from the end of that write to the first byte of the reply (the loop
parsing the request, doing its work and encoding the replies); the round trip adds the client's own
writing and reading. `status` alone is timed the same way as the baseline. Each figure is the median
of --runs runs.

    PUSH_OUTBOX_BIN=$(bash .ci/build-static) python3 Tests/bench/loop_stall.py [--runs 5]

Cases: importLegacy of --max-batch elements (10,000, the most one call takes; also 100,000 with
--max-batch 100000), and flushPending of every item of a store holding N items (N = 100,000 and
1,000,000 with --items), in --memory and with a store on disk.
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

ROOT = Path(__file__).resolve().parents[2]


def line(id_: object, method: str, params: dict | None = None) -> bytes:
    message: dict = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


class Server:
    def __init__(self, binary: str, args: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        self.proc = subprocess.Popen(
            [binary, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            bufsize=0,
        )
        self.buffer = b""
        self.first_byte_at = 0.0  # monotonic time the last read() that started a reply returned

    def write(self, data: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(data)

    def reply_to(self, id_: object) -> dict:
        assert self.proc.stdout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" not in self.buffer:
                chunk = os.read(fd, 1 << 20)
                assert chunk, "the server closed its stdout"
                if not self.buffer:
                    self.first_byte_at = time.monotonic()
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            message = json.loads(line)
            if message.get("id") == id_:
                return message

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=600)


def load(server: Server, count: int) -> None:
    """`count` saves in bursts of 10,000 lines, then one status round trip (the loop is warm)."""
    sent = 0
    while sent < count:
        n = min(10_000, count - sent)
        server.write(
            b"".join(
                line(
                    f"l{sent + i}",
                    "saveCustomEvent",
                    {
                        "name": "push_opened",
                        "properties": {"step": i % 9, "campaign": "spring"},
                        "user": {"externalId": f"user-{(sent + i) % 5000}"},
                    },
                )
                for i in range(n)
            )
        )
        server.reply_to(f"l{sent + n - 1}")
        sent += n
    server.write(line("warm", "status"))
    server.reply_to("warm")


def timed(server: Server, big: bytes, big_id: object) -> tuple[float, float]:
    """Writes `big` and a status behind it. Returns the ms from the end of the write (the server has
    read all but the pipe's last 64 KiB) to the first byte of the reply (the loop's stall: parse,
    work, encoding), and the ms from the start of the write to the status reply read whole."""
    start = time.monotonic()
    server.write(big + line("behind", "status"))
    written = time.monotonic()
    first = server.reply_to(big_id)
    stall = (server.first_byte_at - written) * 1000
    assert "result" in first, str(first)[:300]
    server.reply_to("behind")
    return stall, (time.monotonic() - start) * 1000


def legacy(n: int) -> dict:
    return {"pending_custom_events": [{"event_name": f"e{i}", "step": i} for i in range(n)]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--binary",
        default=os.environ.get("PUSH_OUTBOX_BIN", str(ROOT / ".build/release/push-outbox")),
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--items", default="100000,1000000")
    args = parser.parse_args()
    print(f"binary {args.binary}; median of {args.runs} runs")
    print(
        "stall: ms from the end of the write to the first reply byte (the loop busy with the request);"
    )
    print("round trip: ms from the start of the write to the status behind it, read whole")
    print(f"{'case':<48} {'stall':>10} {'round trip':>12}")
    with tempfile.TemporaryDirectory(prefix="push-outbox-stall-") as work:
        cases = [("status alone (--memory)", ["--memory"], 0, lambda: (b"", None))]
        for n, extra in ((10_000, []), (100_000, ["--max-batch", "100000"])):
            body = line("big", "importLegacy", legacy(n))
            cases.append(
                (
                    f"importLegacy {n:,} elements (--memory)",
                    ["--memory", *extra],
                    0,
                    lambda b=body: (b, "big"),
                )
            )
            cases.append(
                (
                    f"importLegacy {n:,} elements (store)",
                    ["STORE", *extra],
                    0,
                    lambda b=body: (b, "big"),
                )
            )
        for count in (int(x) for x in args.items.split(",")):
            body = line("big", "flushPending", {})
            cases.append(
                (
                    f"flushPending of {count:,} items (--memory)",
                    ["--memory"],
                    count,
                    lambda b=body: (b, "big"),
                )
            )
            cases.append(
                (
                    f"flushPending of {count:,} items (store)",
                    ["STORE"],
                    count,
                    lambda b=body: (b, "big"),
                )
            )
        for name, flags, items, make in cases:
            stalls, trips = [], []
            for run in range(args.runs):
                store = (
                    ["--store", f"{work}/s{len(stalls)}-{run}-{abs(hash(name))}"]
                    if "STORE" in flags
                    else []
                )
                server = Server(args.binary, store + [f for f in flags if f != "STORE"])
                load(server, items)
                big, big_id = make()
                if big_id is None:
                    big, big_id = line("alone", "status"), "alone"
                stall, trip = timed(server, big, big_id)
                stalls.append(stall)
                trips.append(trip)
                server.close()
            print(
                f"{name:<48} {statistics.median(stalls):>7.1f} ms {statistics.median(trips):>9.1f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
