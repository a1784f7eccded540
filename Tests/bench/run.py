#!/usr/bin/env python3
"""The push-outbox benchmark suite (issue 8, "The benchmark"): one command, every figure in one run.

    PUSH_OUTBOX_BIN=$(bash .ci/build-static) python3 Tests/bench/run.py   # the build this suite expects
    python3 Tests/bench/run.py [--json FILE] [--requests 1000000] [--runs 3] [--cold-runs 20]
    python3 Tests/bench/run.py --smoke                  # every section at tiny sizes (CI)

The binary is $PUSH_OUTBOX_BIN (the self-contained release build of .ci/build-static), else
.build-static/release/push-outbox, else .build/release/push-outbox. Node (for its baseline) is optional.
On Linux, --static-swift-stdlib leaves only libc, libm, libstdc++ and libgcc_s dynamic (ldd; the header
prints them); adding -Xswiftc -static-executable links everything and about halves the cold start.
Sections, on the realistic mix (saveCustomEvent with a `user` on every line) unless named otherwise:
  realistic      N saves: cat (floor), --memory, --store onto a fresh store, Node and Python baselines, and
                 Redis with appendonly/everysec fed by redis-cli --pipe (redis_baseline.py)
  nouser         the same on the older no-user input
  backlog        N saves onto a store that already holds N (a copy of one backlog per run)
  mixed          all three save kinds, flushPending every 10,000 lines: cat, --memory, --store
  bytes_per_item VmRSS growth per held item, --memory and the Node baseline
  latency        p50 / p99 / p99.9 round trips, driver and server pinned to one core
  cold_start     spawn to first reply, --memory and a fresh --store (and the baselines)
  first_reply    spawn to the status reply with N and 2N items pending, and peak RSS
  delivery       realistic saves onto a fresh store, delivery off vs --deliver against a local fake
                 /users/track answering at once (its own process), and the cold start with delivery configured
  drain          a 200k backlog delivered by `push-outbox deliver` to a fake /users/track answering after 0, 20,
                 100 and 250 ms, and --deliver while saving: objects/s, requests in flight, CPU per 100k
                 objects, the busiest rate window, duplicates (drain.py, track_fake.py)
  fleet          the drain backlog relayed into a local nats-server, then delivered by the elected
                 `deliver --from --follow` to the fake at 100 ms: items/s, in flight, busiest window (fleet_drain.py)
  lsp            push-outbox lsp: edit + pull diagnostics round trips on a 4 KB payload against the same
                 text unchecked (the difference is the check), and 1,000 edits at once (lsp.py)
  instructions   (only with --callgrind) instructions per save under callgrind, both mixes and modes
Each figure prints as min / median / max over its runs and as a ratio to a figure of the same run.
The suite asserts only correctness (every request answered, exact reply counts, no error replies,
clean exits, the pending count of the prepared stores); it never fails on a time.
"""
import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import delivery
import drain
import fleet_drain
import inputs
import instructions
import latency
import lsp
import procs
import report
import scale
import throughput

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SECTIONS = ["realistic", "nouser", "backlog", "mixed", "bytes_per_item", "latency", "cold_start", "first_reply", "delivery",
            "drain", "fleet", "lsp"]
OPTIONAL = ["instructions", "scale"]


class Context:
    def __init__(self, args, work):
        static = os.path.join(ROOT, ".build-static/release/push-outbox")
        default = static if os.path.exists(static) else os.path.join(ROOT, ".build/release/push-outbox")
        self.binary = os.path.abspath(os.environ.get("PUSH_OUTBOX_BIN", default))
        self.node = shutil.which("node") if not args.no_node else None
        self.no_redis = args.no_redis
        self.compare = os.path.abspath(args.compare) if args.compare else None
        self.metrics = args.metrics
        self.python = sys.executable
        self.work = work
        self.requests, self.runs, self.cold_runs = args.requests, args.runs, args.cold_runs
        self.trips, self.warmup = args.trips, args.warmup
        self.callgrind_saves, self.callgrind_runs = args.callgrind_saves, args.callgrind_runs
        self.scale = args.scale
        self.backlog_dir = self.doubled_dir = None

    @staticmethod
    def here(name):
        return os.path.join(HERE, name)

    def fresh_store(self):
        """A path for a store that does not exist yet, in a new directory of its own."""
        return os.path.join(tempfile.mkdtemp(prefix="run-", dir=self.work), "store")

    @staticmethod
    def discard(store):
        if store:
            shutil.rmtree(os.path.dirname(store), ignore_errors=True)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1_000_000, help="saves per throughput run, and backlog size")
    parser.add_argument("--runs", type=int, default=3, help="runs per throughput, memory, latency and first-reply figure")
    parser.add_argument("--cold-runs", type=int, default=20, help="timed starts per cold-start figure")
    parser.add_argument("--trips", type=int, default=10_000, help="timed round trips per latency run")
    parser.add_argument("--warmup", type=int, default=1_000, help="untimed round trips before them")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (2,000 requests, 2 runs) for CI")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset of: " + ", ".join(SECTIONS + OPTIONAL) + " (default: all but the optional " + ", ".join(OPTIONAL) + ")")
    parser.add_argument("--json", metavar="FILE", help="also write the raw numbers here")
    parser.add_argument("--workdir", default=None, help="where inputs and stores go (default: the temp dir)")
    parser.add_argument("--no-node", action="store_true", help="skip the Node baseline")
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis baseline (realistic section)")
    parser.add_argument("--compare", metavar="BIN", help="another build (e.g. the commit before a change): its --memory and "
                        "--store rows run interleaved with this build's in the throughput sections, as the ratios' baseline")
    parser.add_argument("--metrics", action="store_true", help="add --memory and --store rows with --metrics-listen "
                        "127.0.0.1:0 and --metrics-file, interleaved with the rows without them, as ratios to those")
    parser.add_argument("--note", default="", help="free text for the header and the JSON (e.g. what the binary is)")
    parser.add_argument("--callgrind", action="store_true", help="add the instructions section (needs valgrind)")
    parser.add_argument("--callgrind-saves", type=int, default=20_000, help="saves per callgrind count")
    parser.add_argument("--callgrind-runs", type=int, default=1, help="callgrind counts per figure")
    parser.add_argument("--scale", type=int, default=10, help="with --sections scale: how many times --requests "
                        "saves one process takes (default 10: 10M)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.requests, args.runs, args.cold_runs, args.trips, args.warmup = 2_000, 2, 2, 200, 20
        args.callgrind_saves = 500
    args.sections = [s for s in args.sections.split(",") if s] + (["instructions"] if args.callgrind else [])
    unknown = set(args.sections) - set(SECTIONS + OPTIONAL)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if "first_reply" in args.sections and "backlog" not in args.sections:
        parser.error("first_reply needs the stores the backlog section prepares")
    return args


def describe(ctx, args):
    """Facts about the run, printed first and kept in the JSON."""
    def output(command):
        try:
            return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    linked = [row.split()[0] for row in output(["ldd", ctx.binary]).splitlines() if row.strip()]
    return {
        "binary": ctx.binary, "commit": output(["git", "rev-parse", "--short", "HEAD"]),
        "linked": linked, "node": output([ctx.node, "--version"]) if ctx.node else None,
        "python": platform.python_version(), "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "workdir": ctx.work,
        "requests": ctx.requests, "runs": ctx.runs, "cold_runs": ctx.cold_runs, "trips": ctx.trips,
        "warmup": ctx.warmup, "smoke": args.smoke, "command": " ".join(sys.argv), "note": args.note,
    }


def run_sections(ctx, wanted, out):
    """Runs the wanted sections in order, printing each as it completes; returns them."""
    paths = {}

    def input_path(name, make):
        if name not in paths:
            paths[name] = inputs.write(os.path.join(ctx.work, f"{name}.jsonl"), make())
        return paths[name]

    realistic = lambda: input_path("realistic", lambda: inputs.event_lines(ctx.requests, True))  # noqa: E731
    done, results = {}, []
    steps = {
        "realistic": lambda: throughput.saves(ctx, "realistic", f"{ctx.requests:,} realistic saves (a user on every line)",
                                             realistic(), redis=not ctx.no_redis),
        "nouser": lambda: throughput.saves(ctx, "nouser", f"{ctx.requests:,} saves without user",
                                           input_path("nouser", lambda: inputs.event_lines(ctx.requests, False))),
        "backlog": lambda: throughput.backlog(ctx, realistic(), empty_store_figure(ctx, done, realistic())),
        "mixed": lambda: throughput.mixed(ctx, input_path("mixed", lambda: inputs.mixed_lines(ctx.requests))),
        "bytes_per_item": lambda: latency.held_bytes(ctx, realistic()),
        "latency": lambda: latency.latency(ctx),
        "cold_start": lambda: latency.cold_start(ctx),
        "first_reply": lambda: latency.first_reply(ctx, cold_store_figure(done)),
        "delivery": lambda: delivery.delivery(ctx, realistic()),
        "drain": lambda: drain.drain(ctx),
        "fleet": lambda: fleet_drain.fleet_drain(ctx, drain_figure(done)),
        "lsp": lambda: lsp.lsp(ctx),
        "instructions": lambda: instructions.instructions(ctx),
        "scale": lambda: scale.scale(ctx, realistic()),
    }
    for key in SECTIONS + OPTIONAL:
        if key in wanted:
            done[key] = steps[key]()
            results.append(done[key])
            report.print_section(done[key], out)
    return results


def drain_figure(done):
    """The one-host delivery at 100 ms the fleet is compared with, when the drain section ran."""
    section = done.get("drain")
    return section.made.get("deliver, 100 ms") if section else None


def empty_store_figure(ctx, done, path):
    """The fresh-store figure the backlog is compared with: from the realistic section, else measured now."""
    if "realistic" in done:
        return done["realistic"].made["push-outbox --store, fresh"]
    rows = [r for r in throughput.contenders(ctx, baselines=False) if r[0] == "push-outbox --store, fresh"]
    section = report.Section("empty", "")
    seconds, peaks = throughput.measure(ctx, rows, path, ctx.requests, ctx.fresh_store)
    return throughput.figures(section, rows, seconds, peaks, ctx.requests)[rows[0][0]]


def cold_store_figure(done):
    section = done.get("cold_start")
    return section.made["push-outbox --store, fresh"] if section else None


def main(argv=None):
    args = parse(argv if argv is not None else sys.argv[1:])
    work = tempfile.mkdtemp(prefix="push-outbox-bench-", dir=args.workdir)
    ctx = Context(args, work)
    try:
        if not os.access(ctx.binary, os.X_OK):
            sys.exit(f"no binary at {ctx.binary}: run swift build -c release --static-swift-stdlib")
        meta = describe(ctx, args)
        print(f"# push-outbox benchmark, {meta['date']}, checkout {meta['commit']}, {meta['cpus']} CPUs, "
              f"load {meta['loadavg_start'][0]:.2f}\nbinary {ctx.binary} (links {', '.join(meta['linked'])})\n"
              f"node {meta['node'] or 'absent'}, python {meta['python']}\ncommand: {meta['command']}"
              + (f"\nnote: {args.note}" if args.note else ""), flush=True)
        sections = run_sections(ctx, args.sections, sys.stdout)
        meta["loadavg_end"] = os.getloadavg()
        print(f"\nload average at the end: {meta['loadavg_end'][0]:.2f}; every request was answered.")
        if args.json:
            report.write_json(args.json, meta, sections)
    except procs.BenchError as error:
        sys.exit(f"benchmark failed (correctness): {error}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
