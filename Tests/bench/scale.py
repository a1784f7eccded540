"""Optional section (--sections scale, not in the default run nor in CI's smoke): one process grows one
store to `--scale` times `--requests` realistic saves (10M by default), and the benchmark reports the rate
of each million against a fresh store's rate in the same run; then the first reply with all of them
pending, and `push-outbox flush --format usersTrack` of the whole store (items per second, peak RSS).

The input is the realistic file `--scale` times over, written once into one file (request ids repeat; every
line is still one save and one reply). Both the fresh run and the long one read their input from a file: fed
by `cat` through a pipe, the long run shared the machine's two cores with `cat`, which the fresh run did not,
and its first million already ran at about 0.9x the fresh rate. Both are timed to their last reply, not to the
exit (the fresh store's exit writes its snapshot, which the long run's blocks do not include)."""
import os
import shutil
import subprocess
import time

import procs
from report import Figure, Section


def repeated(ctx, path, copies):
    """The file at `path`, `copies` times over in one file in the benchmark's scratch directory."""
    out = os.path.join(ctx.work, f"scale-{copies}x.jsonl")
    if not os.path.exists(out):
        with open(out, "wb") as dst:
            for _ in range(copies):
                with open(path, "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
    return out


def grow(ctx, path, store, copies):
    """Seconds for each block of ctx.requests replies (spawn to the first block's end for the first),
    and the peak RSS; checks that every line was answered without an error. `path` holds `copies`
    blocks."""
    with open(path, "rb") as inp:
        start = time.perf_counter()
        proc = subprocess.Popen([ctx.binary, "--store", store], stdin=inp, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        counter = procs.ReplyCounter(proc.stdout.fileno())
        marks = [start]
        for block in range(1, copies + 1):
            counter.read_until(block * ctx.requests)
            marks.append(time.perf_counter())
        counter.read_until()
        peak = procs._reap(proc)
    proc.stdout.close()
    counter.check("push-outbox --store (scale)", copies * ctx.requests)
    return [b - a for a, b in zip(marks, marks[1:])], peak


def flush_all(ctx, store, expect):
    """`flush --format usersTrack` of the whole store: (seconds, peak RSS bytes, objects written)."""
    start = time.perf_counter()
    proc = subprocess.Popen([ctx.binary, "flush", "--store", store, "--format", "usersTrack"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    objects = 0  # event objects, by their "name" member (the realistic properties have no "name" key)
    for line in proc.stdout:
        objects += line.count(b'"name":')
    peak = procs._reap(proc)
    seconds = time.perf_counter() - start
    if objects != expect:
        raise procs.BenchError(f"flush --format usersTrack wrote {objects} events of {expect}")
    return seconds, peak, objects


def scale(ctx, path):
    copies = ctx.scale
    total = copies * ctx.requests
    section = Section("scale", f"{total:,} realistic saves into one --store process, then its first reply and its flush",
                      f"{ctx.runs} run(s). Each block is {ctx.requests:,} saves; ratios to a fresh store's "
                      f"{ctx.requests:,} in the same run, timed as block 1 is: spawn to its last reply.")
    fresh, blocks, overall, first, first_rss, flush_rate, flush_rss, grow_rss = [], [[] for _ in range(copies)], \
        [], [], [], [], [], []
    for _ in range(ctx.runs):
        store = ctx.fresh_store()
        try:
            times, _ = grow(ctx, path, store, 1)  # timed as block 1 is: spawn to the last reply
            fresh.append(ctx.requests / times[0])
        finally:
            ctx.discard(store)
        store = ctx.fresh_store()
        try:
            times, peak = grow(ctx, repeated(ctx, path, copies), store, copies)
            for n, t in enumerate(times):
                blocks[n].append(ctx.requests / t)
            overall.append(total / sum(times))
            grow_rss.append(peak)
            seconds, peak, _ = procs.first_reply([ctx.binary, "--store", store])
            first.append(seconds)
            first_rss.append(peak)
            seconds, peak, objects = flush_all(ctx, store, total)
            flush_rate.append(objects / seconds)
            flush_rss.append(peak)
        finally:
            ctx.discard(store)
    base = section.add(Figure(f"fresh store, {ctx.requests:,} saves", "req/s", fresh))
    for n, rates in enumerate(blocks):
        section.add(Figure(f"block {n + 1} of {copies}", "req/s", rates, base))
    section.add(Figure(f"all {total:,} in one process", "req/s", overall, base))
    section.add(Figure(f"peak RSS of the process at {total:,}", "MB", grow_rss))
    section.add(Figure(f"first reply with {total:,} pending", "ms", first))
    section.add(Figure("peak RSS of that process", "MB", first_rss))
    section.add(Figure(f"flush --format usersTrack of {total:,}", "items/s", flush_rate))
    section.add(Figure("peak RSS of the flush", "MB", flush_rss))
    return section
