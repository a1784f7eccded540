"""The fleet section (issue 41, "The fleet deliverer too"): the drain section's backlog relayed into
a local `nats-server -js`, then delivered from the stream by two `deliver --from … --follow`
processes (one leads, one stands by) to the same delayed fake `/users/track` (track_fake.py, 100 ms).

Figures, per run:
- `relay` one-shot into the stream: items/s (spawn to exit);
- the elected deliverer at 100 ms: objects/s from the fake's first request to its last object (the
  rate once a leader sends; a new leader first waits one `--braze-rate` window, by design), and from
  the deliverers' spawn to the last object;
- in `extra`: requests in flight at the fake (max, mean), the busiest 1 s window against the
  limit, duplicates (0 without faults), and CPU seconds of both deliverers per 100,000 objects.

The ratio is to the drain section's `deliver, 100 ms` row when both ran. It checks that every
object arrived once; it never judges a time. Needs `nats-server` on PATH (or in the venv).
"""

import os
import shutil
import signal
import subprocess
import time

import drain
import procs
from relay import start_nats
from report import Figure, Section


def fleet_drain(ctx, base=None):
    count = 2_000 if ctx.requests <= 2_000 else 200_000
    section = Section(
        "fleet",
        f"a {count:,}-item backlog relayed into a local nats-server, then delivered by the elected"
        " `deliver --from --follow` to the fake /users/track at 100 ms",
        f"{ctx.runs} runs. relay: items/s, spawn to exit. Deliverer: objects/s from the fake's first"
        " request to its last object (once a leader sends), and from the deliverers' spawn. Ratio: to the"
        " drain section's `deliver, 100 ms` (one host, from its store).",
    )
    path = os.path.join(ctx.work, f"fleet-{count}.jsonl")
    with open(path, "w") as f:
        f.writelines(drain.backlog_lines(count))
    store = ctx.fresh_store()
    with open(path, "rb") as inp:
        subprocess.run([ctx.binary, "--store", store], stdin=inp, stdout=subprocess.DEVNULL, check=True)
    relayed, leading, spawned, extras = [], [], [], []
    try:
        for _ in range(ctx.runs):
            r, lead, spawn, extra = one_run(ctx, store, count)
            relayed.append(r)
            leading.append(lead)
            spawned.append(spawn)
            extras.append(extra)
    finally:
        ctx.discard(store)
    section.add(Figure("relay into the stream", "items/s", relayed))
    section.add(
        Figure("fleet deliverer, 100 ms, while leading", "items/s", leading, baseline=base,
               extra={"runs": extras})
    )
    section.add(Figure("fleet deliverer, 100 ms, spawn to last object", "items/s", spawned, baseline=base))
    section.note += " Runs: " + "; ".join(
        f"run {n + 1}: in flight max {e['max_in_flight']} mean {e['mean_in_flight']}, busiest window "
        f"{e['busiest_window']} (limit {e['rate_limit']}), duplicates {e['duplicates']}, CPU "
        f"{e['cpu_s_per_100k']} s per 100k"
        for n, e in enumerate(extras)
    ) + "."
    section.made = {f.label: f for f in section.figures}
    return section


def one_run(ctx, store, count):
    work = ctx.fresh_store()
    root = os.path.dirname(work)
    nats, url = start_nats(root)
    fake = None
    deliverers = []
    try:
        shutil.copytree(store, work)
        start = time.perf_counter()
        subprocess.run([ctx.binary, "relay", "--to", url, "--store", work], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        relayed = count / (time.perf_counter() - start)
        fake = drain.Fake(100)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        env["BRAZE_API_KEY"] = "bench-key"
        args = [ctx.binary, "deliver", "--from", url, "--follow", "--braze-endpoint", fake.url]
        cpu = drain.child_cpu()
        start = time.perf_counter()
        deliverers = [
            subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(root, f"d{k}.log"), "wb"), env=env)
            for k in range(2)
        ]
        deadline = time.perf_counter() + 600
        while fake.stats()["objects"] < count:
            if time.perf_counter() > deadline or any(d.poll() is not None for d in deliverers):
                raise procs.BenchError(f"fleet: the fake has {fake.stats()['objects']} of {count} objects")
            time.sleep(0.05)
        spawned = count / (time.perf_counter() - start)
        stats = fake.stats()
        for d in deliverers:
            d.send_signal(signal.SIGTERM)
        for d in deliverers:
            d.wait(timeout=60)
        cpu = drain.child_cpu() - cpu
        drain.check(stats, count, "fleet deliverer")
        leading = count / max(1e-9, stats["last"] - stats["first"])
        return relayed, leading, spawned, {
            "max_in_flight": stats["max_in_flight"],
            "mean_in_flight": stats["mean_in_flight"],
            "busiest_window": stats["busiest_window"],
            "rate_limit": 500,
            "duplicates": stats["duplicates"],
            "requests": stats["requests"],
            "cpu_s_per_100k": round(cpu / count * 100_000, 3),
        }
    finally:
        for d in deliverers:
            if d.poll() is None:
                d.kill()
                d.wait()
        if fake:
            fake.close()
        nats.terminate()
        nats.wait()
        ctx.discard(work)
