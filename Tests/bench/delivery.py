"""The delivery section (issue 11, "Off the request path"): the same realistic saves onto a fresh
store with delivery off and with `--deliver` against a local fake `/users/track` answering 201 at
once (track_fake.py with no delay, on 127.0.0.1), and the cold start with delivery configured. Runs
interleave round-robin. The fake's request count shows how much was delivered while the saves ran.

The fake runs as its own process. An in-process stub would share the driver's interpreter lock with
the thread that reads the replies: once delivery sends hundreds of requests a run, the reader falls
behind, push-outbox waits on a full pipe, and the figure measured the driver (0.23-0.39x instead of
0.84x with the same builds)."""
import os
import shutil

import latency
import procs
from drain import Fake
from report import Figure, Section

OFF = "push-outbox --store, delivery off"
ON = "push-outbox --store --deliver, local fake"


def delivery(ctx, input_path):
    stub = Fake(0)
    try:
        section = Section("delivery", f"{ctx.requests:,} realistic saves with background delivery to a local fake /users/track",
                          f"req/s = lines / (spawn to exit), {ctx.runs} runs; the fake (its own process) answers 201 at once. "
                          "Cold start and first reply (with the backlog section's store, when it ran): spawn to "
                          "the status reply, delivery configured or not. "
                          "Ratio: --deliver over delivery off.")
        env = dict(os.environ, BRAZE_API_KEY="bench-key")
        deliver = ["--braze-endpoint", stub.url, "--deliver", "--drain-timeout", "0"]  # exit at EOF, as before the drain
        seconds = {OFF: [], ON: []}
        sent = []
        for _ in range(ctx.runs):
            for label, extra in ((OFF, []), (ON, deliver)):
                directory = ctx.fresh_store()
                before = stub.stats()["requests"]
                secs, _ = procs.throughput([ctx.binary, "--store", directory, *extra], input_path, ctx.requests, env=env)
                ctx.discard(directory)
                seconds[label].append(secs)
                if extra:
                    sent.append(stub.stats()["requests"] - before)
        off = Figure(OFF, "req/s", [ctx.requests / s for s in seconds[OFF]])
        on = Figure(ON, "req/s", [ctx.requests / s for s in seconds[ON]], baseline=off,
                    extra={"fake_requests_during_run": sent})
        section.add(off)
        section.add(on)
        cold = {OFF: [], ON: []}
        for n in range(3 + ctx.cold_runs):
            for label, extra in ((OFF, []), (ON, deliver)):
                directory = ctx.fresh_store()
                secs = procs.cold_start([ctx.binary, "--store", directory, *extra], latency.WARM_LINE, env)
                ctx.discard(directory)
                if n >= 3:
                    cold[label].append(secs)
        cold_off = Figure("cold start, " + OFF, "ms", cold[OFF])
        section.add(cold_off)
        section.add(Figure("cold start, " + ON, "ms", cold[ON], baseline=cold_off))
        if ctx.backlog_dir:
            backlog_first_reply(ctx, section, env, deliver)
        section.made = {f.label: f for f in section.figures}
        section.note += f" Fake requests while the saves ran (per --deliver run): {sent}."
        return section
    finally:
        stub.close()


def backlog_first_reply(ctx, section, env, deliver):
    """status on copies of the backlog section's store (N pending), delivery off and on."""
    times = {OFF: [], ON: []}
    for _ in range(ctx.runs):
        for label, extra in ((OFF, []), (ON, deliver)):
            directory = ctx.fresh_store()
            shutil.copytree(ctx.backlog_dir, directory)
            secs, _, _ = procs.first_reply([ctx.binary, "--store", directory, *extra], env)
            ctx.discard(directory)
            times[label].append(secs)
    off = section.add(Figure(f"first reply, {ctx.requests:,} pending, " + OFF, "ms", times[OFF]))
    section.add(Figure(f"first reply, {ctx.requests:,} pending, " + ON, "ms", times[ON], baseline=off))
