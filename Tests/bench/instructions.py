"""Optional section (--callgrind): instructions per save under valgrind's callgrind, which stay steady on a
noisy machine. Per save = (instructions for N saves - instructions for 1 save) / (N - 1), all threads,
start-up and exit (the final snapshot) included in both, so they cancel out. With `--threads 1`: callgrind
runs a process's threads one at a time, so with two it would also count the threads' spinning while each
waits for the other, which says nothing about the work a save takes."""
import os
import shutil

import inputs
import procs
from report import Figure, Section


def total_instructions(command, input_path, expect, out_file):
    wrapped = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", *command]
    procs.throughput(wrapped, input_path, expect)
    with open(out_file) as f:
        for row in f:
            if row.startswith(("summary:", "totals:")):
                return int(row.split()[1])
    raise procs.BenchError(f"no instruction total in {out_file}")


def per_save(ctx, command, one_path, many_path, count):
    counts = []
    for path, expect in ((one_path, 1), (many_path, count)):
        directory = ctx.fresh_store()
        counts.append(total_instructions(command(directory), path, expect, os.path.dirname(directory) + ".out"))
        ctx.discard(directory)
    return (counts[1] - counts[0]) / (count - 1)


def instructions(ctx):
    if not shutil.which("valgrind"):
        raise procs.BenchError("--callgrind needs valgrind on PATH")
    count = max(2, min(ctx.requests, ctx.callgrind_saves))
    section = Section("instructions", f"instructions per save (callgrind, {count:,} saves, --threads 1)",
                      f"{ctx.callgrind_runs} run(s). Ratio: --store over --memory; no-user --memory over realistic --memory.")
    files = {}
    for mix, with_user in (("realistic", True), ("no user", False)):
        one = inputs.write(os.path.join(ctx.work, f"cg-one-{with_user}.jsonl"), inputs.event_lines(1, with_user))
        many = inputs.write(os.path.join(ctx.work, f"cg-many-{with_user}.jsonl"), inputs.event_lines(count, with_user))
        files[mix] = (one, many)
    one_thread = ["--threads", "1"]
    modes = (
        ("--memory", lambda d: [ctx.binary, "--memory", *one_thread]),
        ("--store, fresh", lambda d: [ctx.binary, "--store", d, *one_thread]),
    )
    first_memory = None
    for mix, (one, many) in files.items():
        memory = None
        for mode, command in modes:
            values = [per_save(ctx, command, one, many, count) for _ in range(ctx.callgrind_runs)]
            base = memory if memory else first_memory
            figure = section.add(Figure(f"push-outbox {mode}, {mix}", "instr", values, base))
            memory = memory or figure
        first_memory = first_memory or memory
    return section
