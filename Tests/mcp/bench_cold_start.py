"""Cold start to the first MCP `tools/list` answer: spawn the binary, send `initialize`, then
`tools/list` as soon as the `initialize` reply arrives, and time until the `tools/list` reply is read.
Prints the median, min and max of N runs (default 20). A benchmark: it prints, it never fails.

    python3 Tests/mcp/bench_cold_start.py [--binary PATH] [--runs N] [--store]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Protocol/tests"))
import replay  # noqa: E402  (binary lookup)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def once(binary: Path, args: List[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen([str(binary), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    proc.stdin.write(
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        + json.dumps(LIST).encode()
        + b"\n"
    )
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    elapsed = time.perf_counter() - start
    assert len(reply["result"]["tools"]) == 13, reply
    proc.stdin.close()
    proc.wait(timeout=30)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--store", action="store_true", help="a fresh --store directory per run")
    options = parser.parse_args()
    binary = replay.find_binary(options.binary)
    times = []
    for _ in range(options.runs):
        if options.store:
            with tempfile.TemporaryDirectory(prefix="push-outbox-bench-") as tmp:
                times.append(once(binary, ["--store", str(Path(tmp) / "store")]))
        else:
            times.append(once(binary, ["--memory"]))
    ms = [t * 1000 for t in times]
    mode = "--store (fresh)" if options.store else "--memory"
    print(
        f"cold start to the first tools/list answer, {binary}, {mode}, {options.runs} runs: "
        f"median {statistics.median(ms):.2f} ms, min {min(ms):.2f} ms, max {max(ms):.2f} ms"
    )


if __name__ == "__main__":
    main()
