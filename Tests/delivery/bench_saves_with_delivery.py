#!/usr/bin/env python3
"""Saves through real pipes with delivery off and with --deliver against the local stub.

    python3 Tests/delivery/bench_saves_with_delivery.py 50000

Prints the time to the last save reply, the exit time and the process CPU time for each. It
measures only; it asserts that every save was answered, never a time.
"""
import json, os, subprocess, sys, tempfile, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from braze_stub import BrazeStub
BIN = os.environ.get('PUSH_OUTBOX_BIN', os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../.build/debug/push-outbox'))
N = int(sys.argv[1])
lines = "".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": "saveCustomEvent",
    "params": {"name": "e", "properties": {"n": n}, "user": {"externalId": f"u{n % 100}"}}}) + "\n" for n in range(N)).encode()
stub = BrazeStub().start()
for label, extra in [("off", []), ("--deliver", ["--braze-endpoint", stub.url, "--deliver"])]:
    d = tempfile.mkdtemp() + "/s"
    t = time.monotonic()
    p = subprocess.Popen([BIN, "--store", d, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={"BRAZE_API_KEY": "k"})
    threading.Thread(target=lambda: (p.stdin.write(lines), p.stdin.flush()), daemon=True).start()
    got = 0
    while got < N:
        got += p.stdout.readline().count(b"\n")
    last = time.monotonic() - t
    p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    total = time.monotonic() - t
    print(f"{label:10s} last reply {last:.3f}s, exit {total:.3f}s, cpu user {ru.ru_utime:.2f}s sys {ru.ru_stime:.2f}s")
print("stub requests:", len(stub.requests))
