"""Throughput sections: pipelined saves from a file, replies drained and counted, whole process timed
(spawn to exit, so a store's final snapshot is included). Runs are interleaved round-robin so that
load from other work on the machine spreads over every contender alike."""
import os
import shutil

import procs
import redis_baseline
from report import Figure, Section


def contenders(ctx, baselines=True):
    """(label, command factory, baseline label) for the save benchmarks; a factory takes a store dir."""
    rows = [
        ("cat (floor)", lambda d: ["cat"], None),
        ("push-outbox --memory", lambda d: [ctx.binary, "--memory"], "node baseline" if baselines and ctx.node else "cat (floor)"),
        ("push-outbox --store, fresh", lambda d: [ctx.binary, "--store", d], "push-outbox --memory"),
    ]
    if ctx.compare:
        # --compare BIN: the same two rows for another build, interleaved in the same runs; this build's
        # rows are then given as ratios to that build's (before/after figures from one run).
        rows[1:3] = [
            (rows[1][0], rows[1][1], "reference --memory"),
            (rows[2][0], rows[2][1], "reference --store, fresh"),
            ("reference --memory", lambda d: [ctx.compare, "--memory"], "cat (floor)"),
            ("reference --store, fresh", lambda d: [ctx.compare, "--store", d], "reference --memory"),
        ]
    if ctx.metrics:
        # --metrics: the same two rows with /metrics served (an ephemeral loopback port) and the
        # metrics file written, interleaved in the same runs, as ratios to the rows without them.
        def metered(command):
            return lambda d: command(d) + ["--metrics-listen", "127.0.0.1:0",
                                           "--metrics-file", os.path.join(os.path.dirname(d), "metrics.prom")]
        rows += [
            ("push-outbox --memory, metrics on", metered(rows[1][1]), "push-outbox --memory"),
            ("push-outbox --store, fresh, metrics on", metered(rows[2][1]), "push-outbox --store, fresh"),
        ]
    if baselines and ctx.node:
        rows.append(("node baseline", lambda d: [ctx.node, ctx.here("baseline_server.js")], "cat (floor)"))
    if baselines:
        rows.append(("python baseline", lambda d: [ctx.python, ctx.here("baseline_server.py")], "push-outbox --memory"))
    return rows


def measure(ctx, rows, input_path, expect, store_dir):
    """Runs every row ctx.runs times, round-robin; store_dir() makes the store each run starts from."""
    seconds = {label: [] for label, _, _ in rows}
    peaks = {label: [] for label, _, _ in rows}
    for _ in range(ctx.runs):
        for label, command, _ in rows:
            directory = store_dir()
            try:
                run = command(directory)  # an argv, or a callable that runs and times itself (Redis)
                secs, peak = run() if callable(run) else procs.throughput(run, input_path, expect)
            finally:
                shutil.rmtree(os.path.dirname(directory), ignore_errors=True)
            seconds[label].append(secs)
            peaks[label].append(peak)
    return seconds, peaks


def figures(section, rows, seconds, peaks, expect, outside=None):
    made = dict(outside or {})
    for label, _, _ in rows:
        rates = [expect / s for s in seconds[label]]
        made[label] = Figure(label, "req/s", rates, extra={"seconds": seconds[label], "peak_rss_bytes": peaks[label]})
    for label, _, base in rows:
        made[label].baseline = made.get(base)
        section.add(made[label])
    return made


def saves(ctx, key, title, input_path, redis=False):
    """With redis (the realistic section), Redis with AOF runs interleaved too, and push-outbox's two
    rows are repeated as ratios to it."""
    section = Section(key, title, f"{ctx.requests:,} pipelined lines from a file; req/s = lines / (spawn to exit); "
                                  f"{ctx.runs} runs. Ratio: this median req/s over the named figure's.")
    rows = contenders(ctx)
    if redis and not redis_baseline.available():
        print(redis_baseline.missing_message(), flush=True)
        redis = False
    if redis:
        resp = redis_baseline.resp_file(input_path, os.path.join(ctx.work, f"{key}.resp"))
        rows.append((redis_baseline.LABEL, redis_baseline.runner(resp, ctx.requests), None))
    seconds, peaks = measure(ctx, rows, input_path, ctx.requests, ctx.fresh_store)
    section.made = figures(section, rows, seconds, peaks, ctx.requests)
    if redis:
        against = section.made[redis_baseline.LABEL]
        for label in ("push-outbox --store, fresh", "push-outbox --memory"):
            section.add(Figure(f"{label} vs Redis", "req/s", section.made[label].values, baseline=against))
    return section


def build_backlog(ctx, input_path):
    """Saves the input once into a new store and returns its directory (the 1M backlog)."""
    directory = ctx.fresh_store()
    procs.throughput([ctx.binary, "--store", directory], input_path, ctx.requests)
    return directory


def backlog(ctx, input_path, empty_store_figure):
    """Times the saves onto a copy of one backlog; keeps the last run's store (2x items) for later.

    Two views: spawn to exit (loading the backlog included; that cost has its own figure in
    first_reply), and first reply to exit (serving only), against fresh-store runs timed the same way
    in the same rounds: the second is the slow-down with backlog itself."""
    ctx.backlog_dir = build_backlog(ctx, input_path)
    section = Section("backlog", f"--store: the same {ctx.requests:,} saves onto a {ctx.requests:,}-item backlog",
                      "Each run starts from a copy of one backlog built in this run. Ratios: spawn-to-exit over the "
                      "fresh-store figure of the realistic section; first-reply-to-exit over fresh-store runs "
                      "timed the same way, alternating with these.")
    label, fresh, backlog_serving = "push-outbox --store, backlog", "push-outbox --store, fresh (first reply to exit)", \
        "push-outbox --store, backlog (first reply to exit)"
    seconds, peaks = {label: []}, {label: []}
    serving = {fresh: [], backlog_serving: []}
    for _ in range(ctx.runs):
        empty = ctx.fresh_store()
        procs.throughput([ctx.binary, "--store", empty], input_path, ctx.requests, serving[fresh])
        shutil.rmtree(os.path.dirname(empty), ignore_errors=True)
        directory = ctx.fresh_store()
        shutil.copytree(ctx.backlog_dir, directory)
        secs, peak = procs.throughput([ctx.binary, "--store", directory], input_path, ctx.requests,
                                      serving[backlog_serving])
        seconds[label].append(secs)
        peaks[label].append(peak)
        ctx.discard(ctx.doubled_dir)
        ctx.doubled_dir = directory
    made = figures(section, [(label, None, "empty")], seconds, peaks, ctx.requests, {"empty": empty_store_figure})
    base = Figure(fresh, "req/s", [ctx.requests / s for s in serving[fresh]])
    section.add(base)
    section.add(Figure(backlog_serving, "req/s", [ctx.requests / s for s in serving[backlog_serving]], baseline=base))
    return section


def mixed(ctx, input_path):
    section = Section("mixed", "mixed load: all three save kinds with a user, flushPending every 10,000 lines",
                      f"{ctx.requests:,} lines (60% saveCustomEvent, 25% saveCustomAttribute, 15% saveUserAttribute); "
                      f"{ctx.runs} runs.")
    rows = contenders(ctx, baselines=False)
    seconds, peaks = measure(ctx, rows, input_path, ctx.requests, ctx.fresh_store)
    figures(section, rows, seconds, peaks, ctx.requests)
    return section

