"""Process-shaped sections: bytes per held item, round-trip latency, cold start, time to first reply."""
import json
import math
import os
import shutil

import inputs
import procs
from report import Figure, Section

WARM_LINE = b'{"jsonrpc":"2.0","id":0,"method":"saveCustomEvent","params":{"name":"warm","user":{"externalId":"w"}}}\n'


def held_bytes(ctx, input_path):
    section = Section("bytes_per_item", f"bytes per held item: {ctx.requests:,} realistic saves in memory",
                      "VmRSS after the last reply minus VmRSS after one warm-up reply, over the item count; "
                      f"{ctx.runs} runs. Ratio: over the Node baseline.")
    rows = [("push-outbox --memory", [ctx.binary, "--memory"])]
    if ctx.node:
        rows.insert(0, ("node baseline", [ctx.node, ctx.here("baseline_server.js")]))
    per_item = {label: [] for label, _ in rows}
    idle = {label: [] for label, _ in rows}
    for _ in range(ctx.runs):
        for label, command in rows:
            growth, before = procs.held_bytes(command, WARM_LINE, input_path, ctx.requests)
            per_item[label].append(growth / ctx.requests)
            idle[label].append(before)
    made = {}
    for label, _ in rows:
        base = made.get("node baseline") if label != "node baseline" else None
        made[label] = section.add(Figure(label, "B", per_item[label], base, {"idle_rss_bytes": idle[label]}))
    return section


def percentile(sorted_values, q):
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def latency(ctx):
    """Round trips, one request in flight, with the driver and the server pinned to one core."""
    lines = [line.encode() for line in inputs.event_lines(ctx.warmup + ctx.trips, True, seed=3)]
    section = Section("latency", f"round-trip latency: {ctx.trips:,} round trips after {ctx.warmup:,} warm-up, "
                                 "driver and server pinned to one core",
                      f"One realistic save in flight at a time; {ctx.runs} runs. Ratio: over cat at the same percentile.")
    rows = [("cat", lambda d: ["cat"]), ("push-outbox --memory", lambda d: [ctx.binary, "--memory"]),
            ("push-outbox --store, fresh", lambda d: [ctx.binary, "--store", d])]
    quantiles = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)]
    values = {(label, q): [] for label, _ in rows for q, _ in quantiles}
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(allowed)})
    try:
        for _ in range(ctx.runs):
            for label, command in rows:
                directory = ctx.fresh_store()
                times = sorted(procs.round_trips(command(directory), lines, ctx.warmup))
                ctx.discard(directory)
                for q, fraction in quantiles:
                    values[(label, q)].append(percentile(times, fraction))
    finally:
        os.sched_setaffinity(0, allowed)
    for q, _ in quantiles:
        floor = None
        for label, _ in rows:
            figure = section.add(Figure(f"{label} {q}", "us", values[(label, q)], floor))
            floor = floor or figure
    return section


def cold_start(ctx):
    section = Section("cold_start", f"cold start to first reply (one realistic save), {ctx.cold_runs} runs",
                      "Spawn to the reply line; 3 untimed warm-up starts first. --store DIR and the default "
                      "store (no flag, XDG_STATE_HOME set) get a new empty directory every start. Ratio: --memory over Node (else Python), the rest over --memory.")
    rows = [("push-outbox --memory", lambda d: [ctx.binary, "--memory"], "node baseline" if ctx.node else "python baseline"),
            ("push-outbox --store, fresh", lambda d: [ctx.binary, "--store", d], "push-outbox --memory"),
            ("push-outbox default store, fresh", lambda d: ([ctx.binary], dict(os.environ, XDG_STATE_HOME=d)),
             "push-outbox --memory")]
    if ctx.node:
        rows.append(("node baseline", lambda d: [ctx.node, ctx.here("baseline_server.js")], "push-outbox --memory"))
    rows.append(("python baseline", lambda d: [ctx.python, ctx.here("baseline_server.py")], "push-outbox --memory"))
    times = {label: [] for label, _, _ in rows}
    for n in range(3 + ctx.cold_runs):
        for label, command, _ in rows:
            directory = ctx.fresh_store()
            spec = command(directory)
            argv, env = spec if isinstance(spec, tuple) else (spec, None)
            seconds = procs.cold_start(argv, WARM_LINE, env)
            ctx.discard(directory)
            if n >= 3:
                times[label].append(seconds)
    made = {}
    for label, _, _ in rows:
        made[label] = Figure(label, "ms", times[label])
    for label, _, base in rows:
        made[label].baseline = made.get(base)
        section.add(made[label])
    section.made = made
    return section


def first_reply(ctx, cold_store_figure):
    """status on a copy of the prepared stores (N and 2N items pending); time and peak RSS."""
    n = ctx.requests
    section = Section("first_reply", f"time to first reply with {n:,} and {2 * n:,} items pending (--store)",
                      f"Spawn on a copy of the store, send status, time its reply; peak RSS is ru_maxrss over the "
                      f"whole process. {ctx.runs} runs. Ratio: N over the empty-store cold start, 2N over N.")
    previous = {"ms": cold_store_figure, "MB": None}
    for count, source in ((n, ctx.backlog_dir), (2 * n, ctx.doubled_dir)):
        seconds, peaks = [], []
        for _ in range(ctx.runs):
            directory = ctx.fresh_store()
            shutil.copytree(source, directory)
            secs, peak, reply = procs.first_reply([ctx.binary, "--store", directory])
            ctx.discard(directory)
            pending = json.loads(reply)["result"]["pending"]["total"]
            if pending != count:
                raise procs.BenchError(f"store should hold {count} items, status says {pending}")
            seconds.append(secs)
            peaks.append(peak)
        previous["ms"] = section.add(Figure(f"first reply, {count:,} pending", "ms", seconds, previous["ms"]))
        previous["MB"] = section.add(Figure(f"peak RSS, {count:,} pending", "MB", peaks, previous["MB"]))
    return section
