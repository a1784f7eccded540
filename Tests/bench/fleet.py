"""Fleet figures (issue 20), printed, never asserted:

- end to end: two producers relay N saves each into a local `nats-server -js`, while one elected
  deliverer (and a standby) sends them to the delivery suite's Braze stub, which answers at once;
  items/s from the start of the relays to the last object at the stub;
- failover: two `deliver --from --follow`, `kill -9` of the leader, seconds until the standby logs
  `role leader` (median of --failovers runs).

    python Tests/bench/fleet.py --binary "$(bash .ci/build-static)" --items 20000 --failovers 5
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
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "delivery"))
from braze_stub import BrazeStub  # noqa: E402
from relay import start_nats  # noqa: E402


def save(binary, store, count, seed):
    lines = []
    for n in range(count):
        params = {
            "user": {"externalId": f"u{(n * 7 + seed) % 1000}"},
            "name": f"evt_{n % 5}",
            "properties": {"n": n, "seed": seed},
        }
        lines.append(
            json.dumps({"jsonrpc": "2.0", "id": n, "method": "saveCustomEvent", "params": params})
        )
    subprocess.run(
        [binary, "--store", store],
        input=("\n".join(lines) + "\n").encode(),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def deliverer(binary, url, stub, log, *extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    env["BRAZE_API_KEY"] = "bench-key"
    args = [
        binary,
        "deliver",
        "--from",
        url,
        "--follow",
        "--braze-endpoint",
        stub.url,
        "--memory",
        *extra,
    ]
    return subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "wb"), env=env
    )


def is_leader(log):
    lines = [line for line in open(log, errors="replace").read().splitlines() if ": role " in line]
    return bool(lines) and ": role leader" in lines[-1]


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.005)


def stop(procs):
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)


def end_to_end(binary, work, items, rate):
    nats, url = start_nats(os.path.join(work, "e2e"))
    stub = BrazeStub().start()
    try:
        for k in range(2):
            save(binary, os.path.join(work, f"store{k}"), items, k)
        logs = [os.path.join(work, f"e2e-d{k}.log") for k in range(2)]
        pair = [deliverer(binary, url, stub, log, "--braze-rate", rate) for log in logs]
        wait(lambda: any(is_leader(log) for log in logs), 30, "a leader")
        start = time.monotonic()
        relays = [
            subprocess.Popen(
                [binary, "relay", "--to", url, "--store", os.path.join(work, f"store{k}")]
            )
            for k in range(2)
        ]
        for relay in relays:
            relay.wait(timeout=600)
        relayed = time.monotonic() - start
        wait(lambda: len(stub.objects()) >= 2 * items, 600, "every object at the stub")
        took = time.monotonic() - start
        stop(pair)
        rate_seen = 2 * items / took
        print(
            f"end to end: {2 * items} items from 2 producers in {took:.2f} s = {2 * items / took:,.0f} items/s"
            f" ({len(stub.requests)} requests, relays done after {relayed:.2f} s, --braze-rate {rate})"
        )
        return rate_seen
    finally:
        stub.stop()
        nats.terminate()
        nats.wait()


def local_deliver(binary, work, items, rate):
    """The same 2 x N saves delivered from one local store (`deliver`), for the ratio."""
    stub = BrazeStub().start()
    try:
        store = os.path.join(work, "local")
        save(binary, store, 2 * items, 0)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        env["BRAZE_API_KEY"] = "bench-key"
        start = time.monotonic()
        subprocess.run(
            [
                binary,
                "deliver",
                "--store",
                store,
                "--braze-endpoint",
                stub.url,
                "--braze-rate",
                rate,
            ],
            env=env,
            check=True,
            stderr=subprocess.DEVNULL,
        )
        took = time.monotonic() - start
        print(
            f"local deliver: {2 * items} items from one store in {took:.2f} s = {2 * items / took:,.0f} items/s"
            f" ({len(stub.requests)} requests)"
        )
        return 2 * items / took
    finally:
        stub.stop()


def failover(binary, work, run, lease):
    nats, url = start_nats(os.path.join(work, f"failover{run}"))
    stub = BrazeStub().start()
    try:
        logs = [os.path.join(work, f"f{run}-d{k}.log") for k in range(2)]
        pair = [deliverer(binary, url, stub, log, "--leader-lease", str(lease)) for log in logs]
        wait(lambda: any(is_leader(log) for log in logs), 30, "a leader")
        time.sleep(
            lease + random.uniform(0, lease)
        )  # a few renewals, then a kill at a random phase
        leader = next(k for k in range(2) if is_leader(logs[k]))
        killed = time.monotonic()
        pair[leader].kill()
        pair[leader].wait()
        wait(lambda: is_leader(logs[1 - leader]), 10 * lease, "the standby to lead")
        took = time.monotonic() - killed
        stop(pair)
        return took
    finally:
        stub.stop()
        nats.terminate()
        nats.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--items", type=int, default=20_000, help="saves per producer")
    parser.add_argument("--rate", default="500/1", help="--braze-rate of the deliverers")
    parser.add_argument("--failovers", type=int, default=5)
    parser.add_argument("--lease", type=float, default=5.0, help="--leader-lease in seconds")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="push-outbox-bench-fleet-")
    try:
        fleet = end_to_end(args.binary, work, args.items, args.rate)
        local = local_deliver(args.binary, work, args.items, args.rate)
        print(f"fleet / local deliver: {fleet / local:.2f}")
        times = [failover(args.binary, work, run, args.lease) for run in range(args.failovers)]
        if times:
            print(
                f"failover after kill -9 (--leader-lease {args.lease:g}): median {statistics.median(times):.2f} s"
                f" over {len(times)} runs ({', '.join(f'{t:.2f}' for t in times)})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
