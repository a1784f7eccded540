"""The drain section (issue 41): how fast delivery empties the outbox into a fake `/users/track`
(track_fake.py, its own process on 127.0.0.1) that answers `201` after a set delay, the round trip
to simulate. Each run copies one prepared backlog of realistic events, each with a unique property
`u` so the fake counts duplicates. Figures:

- `deliver`, default flags, from the backlog at each delay (0, 20, 100, 250 ms), and at 100 ms with
  `--braze-rate 1000/1`: objects/s over the whole command (spawn to exit);
- while saving: `--deliver` fed the same saves as fast as they are taken, stdin held open until the
  fake has every object: saves/s against the same saves without `--deliver`, and objects/s from
  spawn to the last object at the fake;
- per run (in `extra`): requests in flight at the fake (max, mean), CPU seconds of push-outbox per
  100,000 objects, the busiest rate window at the fake against the limit, duplicates;
- the fake's own capacity: the 0 ms row, where nothing waits, shows it is not what limits the rest.

It checks that every object arrived and none twice; it never judges a time.
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import time
import urllib.request

import procs
from report import Figure, Section

HERE = os.path.dirname(os.path.abspath(__file__))


class Fake:
    def __init__(self, delay_ms, window=1.0):
        self.proc = subprocess.Popen(
            [
                sys.executable,
                os.path.join(HERE, "track_fake.py"),
                "--delay-ms",
                str(delay_ms),
                "--window",
                str(window),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def stats(self):
        with urllib.request.urlopen(self.url + "/_stats", timeout=30) as answer:
            return json.load(answer)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def backlog_lines(count, seed=41):
    """Realistic events, each with a unique `properties.u`."""
    import random

    import inputs

    rng = random.Random(seed)
    for rid in range(1, count + 1):
        params = inputs.event_params(rng, True)
        params["properties"]["u"] = rid
        yield inputs.request_line(rng, rid, "saveCustomEvent", params)


def child_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check(stats, count, label):
    if stats["objects"] != count or stats["duplicates"]:
        raise procs.BenchError(
            f"{label}: the fake got {stats['objects']} objects ({stats['duplicates']} twice), not {count}"
        )


def deliver_run(ctx, store, delay, count, rate=None):
    """One `push-outbox deliver` of a copy of `store`; (objects/s, extra)."""
    fake = Fake(delay)
    work = ctx.fresh_store()
    shutil.copytree(store, work)
    env = dict(os.environ, BRAZE_API_KEY="bench-key")
    args = [ctx.binary, "deliver", "--store", work, "--braze-endpoint", fake.url] + (
        ["--braze-rate", rate] if rate else []
    )
    try:
        cpu = child_cpu()
        start = time.perf_counter()
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        seconds = time.perf_counter() - start
        cpu = child_cpu() - cpu
        if done.returncode != 0:
            raise procs.BenchError(f"deliver exited {done.returncode}: {done.stderr[-300:]}")
        stats = fake.stats()
        check(stats, count, f"deliver at {delay} ms")
    finally:
        fake.close()
        ctx.discard(work)
    limit = int((rate or "500/1").split("/")[0])
    return count / seconds, {
        "max_in_flight": stats["max_in_flight"],
        "mean_in_flight": stats["mean_in_flight"],
        "cpu_s_per_100k": round(cpu / count * 100_000, 3),
        "busiest_window": stats["busiest_window"],
        "rate_limit": limit,
        "duplicates": stats["duplicates"],
        "requests": stats["requests"],
    }


def saving_run(ctx, path, count, deliver):
    """The saves through a fresh `--store` process, with or without `--deliver` to a 100 ms fake;
    (saves/s, objects/s or None, extra)."""
    fake = Fake(100) if deliver else None
    store = ctx.fresh_store()
    env = dict(os.environ, BRAZE_API_KEY="bench-key")
    args = [ctx.binary, "--store", store] + (
        ["--deliver", "--braze-endpoint", fake.url] if fake else []
    )
    try:
        cpu = child_cpu()
        start = time.perf_counter()
        proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        counter = procs.ReplyCounter(proc.stdout.fileno())
        import threading

        reader = threading.Thread(target=counter.read_until, args=(count,))
        reader.start()
        with open(path, "rb") as inp:
            shutil.copyfileobj(inp, proc.stdin, 1 << 20)
        proc.stdin.flush()
        reader.join()
        saves = count / (time.perf_counter() - start)
        counter.check("saves", count)
        delivered = None
        if fake:
            deadline = time.perf_counter() + 300
            while fake.stats()["objects"] < count and time.perf_counter() < deadline:
                time.sleep(0.05)
            delivered = count / (time.perf_counter() - start)
        proc.stdin.close()
        proc.wait(timeout=120)
        cpu = child_cpu() - cpu
        extra = {"cpu_s": round(cpu, 3)}
        if fake:
            stats = fake.stats()
            check(stats, count, "--deliver while saving")
            extra.update(
                max_in_flight=stats["max_in_flight"],
                busiest_window=stats["busiest_window"],
                duplicates=stats["duplicates"],
            )
        return saves, delivered, extra
    finally:
        if fake:
            fake.close()
        ctx.discard(store)


def drain(ctx):
    count = 2_000 if ctx.requests <= 2_000 else 200_000
    runs = ctx.runs
    section = Section(
        "drain",
        f"delivery from a {count:,}-item backlog to a fake /users/track that answers after a delay",
        f"objects/s = objects / (spawn to exit) of `push-outbox deliver`, default flags unless named; "
        f"{runs} runs each. Per run: requests in flight at the fake, CPU s per 100k objects, the busiest "
        "1 s window at the fake against --braze-rate, duplicates (0 without faults). The 0 ms row shows "
        "the fake's own capacity. Ratios: to the 100 ms row.",
    )
    path = os.path.join(ctx.work, f"drain-{count}.jsonl")
    with open(path, "w") as f:
        f.writelines(backlog_lines(count))
    store = ctx.fresh_store()
    with open(path, "rb") as inp:
        subprocess.run(
            [ctx.binary, "--store", store], stdin=inp, stdout=subprocess.DEVNULL, check=True
        )
    rows = [
        ("0 ms", 0, None),
        ("20 ms", 20, None),
        ("100 ms", 100, None),
        ("250 ms", 250, None),
        ("100 ms, --braze-rate 1000/1", 100, "1000/1"),
    ]
    values = {label: [] for label, _, _ in rows}
    extras = {label: [] for label, _, _ in rows}
    for _ in range(runs):
        for label, delay, rate in rows:
            rate_value, extra = deliver_run(ctx, store, delay, count, rate)
            values[label].append(rate_value)
            extras[label].append(extra)
    base = None
    for label, _, _ in rows:
        figure = Figure(
            f"deliver, {label}", "items/s", values[label], extra={"runs": extras[label]}
        )
        if label == "100 ms":
            base = figure
        section.add(figure)
    for figure in section.figures:
        if figure is not base and base is not None:
            figure.baseline = base
    ctx.discard(store)
    off, on, delivered, extra_on = [], [], [], []
    for _ in range(runs):
        off.append(saving_run(ctx, path, count, False)[0])
        saves, objects, extra = saving_run(ctx, path, count, True)
        on.append(saves)
        delivered.append(objects)
        extra_on.append(extra)
    saves_off = section.add(Figure("saves, --store", "req/s", off))
    section.add(
        Figure(
            "saves, --store --deliver (100 ms)",
            "req/s",
            on,
            baseline=saves_off,
            extra={"runs": extra_on},
        )
    )
    section.add(
        Figure(
            "delivered while saving (100 ms), spawn to last object",
            "items/s",
            delivered,
            baseline=base,
        )
    )
    details = "; ".join(
        f"{label}: "
        + ", ".join(
            f"in flight max {e['max_in_flight']} mean {e['mean_in_flight']}, {e['cpu_s_per_100k']} CPU s/100k, "
            f"busiest {e['busiest_window']}/{e['rate_limit']}, dups {e['duplicates']}"
            for e in extras[label]
        )
        for label, _, _ in rows
    )
    section.note += " Runs: " + details + "."
    section.made = {f.label: f for f in section.figures}
    return section
