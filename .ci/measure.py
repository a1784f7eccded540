"""Measures what issue 10 asks to report, in one run (prints; asserts nothing):

- install steps, with timings, of dist/ artifacts into a fresh venv and a fresh Node project;
- `ldd` of the static release binary;
- cold start (spawn, one `status` round trip, EOF, exit) of the static build against the
  dynamic one, interleaved in the same run.

Usage: python .ci/measure.py STATIC_BINARY DYNAMIC_BINARY [--runs N]
(after `bash .ci/package` and `swift build -c release`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
STATUS = b'{"jsonrpc":"2.0","id":1,"method":"status"}\n'


def timed(label: str, args: List[str], cwd: Path, env: Dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    print(f"  {elapsed:7.3f} s  {label}: {' '.join(args)}")
    return elapsed


def install_timings() -> None:
    wheel = next(DIST.glob("push_outbox-*.whl"))
    tarball = next(DIST.glob("push-outbox-*.tgz"))
    print(
        f"artifacts: {wheel.name} ({wheel.stat().st_size} bytes), {tarball.name} ({tarball.stat().st_size} bytes)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": tmp,
            "npm_config_cache": str(t / "npm-cache"),
        }
        print("Python, fresh venv:")
        timed("venv", [sys.executable, "-m", "venv", str(t / "venv")], t, env)
        py = str(t / "venv" / "bin" / "python")
        timed("install", [py, "-m", "pip", "install", "-q", "--no-index", str(wheel)], t, env)
        code = "from push_outbox import Outbox\nwith Outbox.spawn(memory=True) as ob: ob.status()"
        timed("first use", [py, "-c", code], t, env)
        print("Node, fresh project:")
        project = t / "app"
        project.mkdir()
        (project / "package.json").write_text(
            json.dumps({"name": "app", "private": True, "type": "module"})
        )
        timed(
            "install",
            ["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)],
            project,
            env,
        )
        script = "import {Outbox} from 'push-outbox'; const o = await Outbox.spawn({memory: true}); await o.status(); await o.close();"
        (project / "m.mjs").write_text(script)
        timed("first use", ["node", "m.mjs"], project, env)


def cold_start(binaries: Dict[str, str], runs: int) -> None:
    samples: Dict[str, List[float]] = {name: [] for name in binaries}
    for _ in range(runs):
        for name, binary in binaries.items():  # interleaved, so both see the same machine load
            start = time.perf_counter()
            subprocess.run([binary, "--memory"], input=STATUS, capture_output=True, check=True)
            samples[name].append((time.perf_counter() - start) * 1000)
    print(f"cold start, {runs} runs each (spawn, one status, EOF, exit), milliseconds:")
    for name, values in samples.items():
        q = statistics.quantiles(values, n=10)
        print(
            f"  {name:8} median {statistics.median(values):6.2f}  p10 {q[0]:6.2f}  p90 {q[-1]:6.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("static")
    parser.add_argument("dynamic")
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    for name in (args.static, args.dynamic):
        print(
            f"$ ldd {name}\n" + subprocess.run(["ldd", name], capture_output=True, text=True).stdout
        )
    install_timings()
    cold_start({"static": args.static, "dynamic": args.dynamic}, args.runs)


if __name__ == "__main__":
    main()
