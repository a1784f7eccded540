#!/usr/bin/env python3
"""Benchmarks push-outbox against Python and Node equivalents, in the same run, on this machine.

    python3 Tests/bench/run.py [--requests 1000000] [--cold-runs 20]

Prints pipelined throughput (saveCustomEvent through real pipes, whole process, median of 3),
cold start to the first reply (median), and the ratios. It asserts only correctness (every request
answered); it never fails on a time. Build first: swift build -c release.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BINARY = os.environ.get("PUSH_OUTBOX_BIN", os.path.join(ROOT, ".build/release/push-outbox"))


def generate(path, count):
    rng = random.Random(7)
    names = ["session_start", "push_opened", "purchase", "level_up", "share", "view_item", "add_to_cart", "logout"]
    campaigns = ["black_friday", "spring", "welcome", "winback"]
    with open(path, "w") as f:
        for i in range(1, count + 1):
            name = rng.choice(names)
            props = {"campaign": rng.choice(campaigns), "step": rng.randint(1, 9), "ok": rng.random() < 0.5, "tags": ["a", "b"]}
            if name == "purchase":
                props["price"] = round(rng.random() * 100, 2)
            if rng.random() < 0.01:
                props["note"] = 'quote " newline \n é'
            req = {"jsonrpc": "2.0", "id": i, "method": "saveCustomEvent", "params": {"name": name, "properties": props}}
            f.write(json.dumps(req, separators=(",", ":"), ensure_ascii=rng.random() < 0.5) + "\n")


def throughput(command, path, count, runs=3):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with open(path, "rb") as inp:
            proc = subprocess.run(command, stdin=inp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        answered = proc.stdout.count(b"\n")
        if answered != count:
            sys.exit(f"{command[0]} answered {answered} of {count} requests")
    return statistics.median(times)


def cold_start(command, runs):
    line = b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"cold"}}\n'
    times = []
    for n in range(runs + 3):
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        proc.stdin.write(line)
        proc.stdin.flush()
        reply = proc.stdout.readline()
        elapsed = time.perf_counter() - start
        proc.stdin.close()
        proc.wait()
        if b'"result"' not in reply:
            sys.exit(f"{command[0]}: no reply at cold start: {reply!r}")
        if n >= 3:
            times.append(elapsed)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--cold-runs", type=int, default=20)
    args = parser.parse_args()
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"no binary at {BINARY}: run swift build -c release")
    work = tempfile.mkdtemp(prefix="push-outbox-bench-")
    try:
        path = os.path.join(work, "in.jsonl")
        generate(path, args.requests)
        store = os.path.join(work, "store")
        contenders = {
            "push-outbox --memory": [BINARY, "--memory"],
            "push-outbox --store (journal, everysec)": [BINARY, "--store", store],
            "python3 baseline": [sys.executable, os.path.join(HERE, "baseline_server.py")],
        }
        if shutil.which("node"):
            contenders["node baseline"] = ["node", os.path.join(HERE, "baseline_server.js")]
        floor = throughput(["cat"], path, args.requests)
        print(f"pipelined saveCustomEvent, {args.requests} requests, median of 3 (floor: cat {args.requests / floor:,.0f} lines/s)")
        rates = {}
        for label, command in contenders.items():
            shutil.rmtree(store, ignore_errors=True)
            seconds = throughput(command, path, args.requests)
            rates[label] = args.requests / seconds
            print(f"  {label:42s} {seconds:7.3f} s  {rates[label]:12,.0f} req/s")
        print(f"cold start to first reply, median of {args.cold_runs}")
        colds = {}
        for label, command in contenders.items():
            shutil.rmtree(store, ignore_errors=True)
            colds[label] = cold_start(command, args.cold_runs)
            print(f"  {label:42s} {colds[label] * 1000:8.2f} ms")
        ours = rates["push-outbox --memory"]
        for label in ("python3 baseline", "node baseline"):
            if label in rates:
                print(f"ratio: push-outbox --memory is {ours / rates[label]:.2f}x {label} in throughput, "
                      f"{colds[label] / colds['push-outbox --memory']:.1f}x faster to first reply")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
