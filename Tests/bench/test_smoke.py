"""Smoke test of the benchmark suite: `run.py --smoke` against the real binary completes, every request
is answered (run.py exits non-zero otherwise), and every section is reported in the table and the JSON.
No time is judged. Binary: $PUSH_OUTBOX_BIN, else .build/debug/push-outbox.
"""
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SECTIONS = ["realistic", "nouser", "backlog", "mixed", "bytes_per_item", "latency", "cold_start", "first_reply", "delivery", "drain", "fleet", "lsp"]
SMOKE_RUNS = 2


def binary():
    path = Path(os.environ.get("PUSH_OUTBOX_BIN", ROOT / ".build/debug/push-outbox")).resolve()
    assert os.access(path, os.X_OK), f"no push-outbox binary at {path}: run swift build (or set PUSH_OUTBOX_BIN)"
    return path


def test_smoke_run_reports_every_section(tmp_path):
    out = tmp_path / "bench.json"
    env = dict(os.environ, PUSH_OUTBOX_BIN=str(binary()))
    proc = subprocess.run([sys.executable, str(HERE / "run.py"), "--smoke", "--json", str(out), "--workdir", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "every request was answered" in proc.stdout
    doc = json.loads(out.read_text())
    assert list(doc["sections"]) == SECTIONS
    for key, section in doc["sections"].items():
        assert f"## {section['title']}" in proc.stdout, key
        assert section["figures"], key
        for figure in section["figures"]:
            cold = key == "cold_start" or figure["label"].startswith("cold start")
            expected = doc["meta"]["cold_runs"] if cold else SMOKE_RUNS
            assert len(figure["values"]) == expected, (key, figure["label"])
            assert all(math.isfinite(v) for v in figure["values"]), (key, figure["label"])
            assert figure["min"] <= figure["median"] <= figure["max"], (key, figure["label"])
            assert figure["label"] in proc.stdout


def test_smoke_compares_with_baselines_of_the_same_run(tmp_path):
    out = tmp_path / "bench.json"
    env = dict(os.environ, PUSH_OUTBOX_BIN=str(binary()))
    proc = subprocess.run([sys.executable, str(HERE / "run.py"), "--smoke", "--sections", "realistic,backlog,mixed",
                           "--json", str(out), "--workdir", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    figures = {(key, f["label"]): f for key, s in json.loads(out.read_text())["sections"].items() for f in s["figures"]}
    store = figures[("realistic", "push-outbox --store, fresh")]
    assert store["ratio_to"] == "push-outbox --memory"
    assert math.isclose(store["ratio"], store["median"] / figures[("realistic", "push-outbox --memory")]["median"])
    backlog = figures[("backlog", "push-outbox --store, backlog")]
    assert (backlog["ratio_to_section"], backlog["ratio_to"]) == ("realistic", "push-outbox --store, fresh")
    assert figures[("mixed", "push-outbox --memory")]["ratio_to"] is not None
    if shutil.which("redis-server") and shutil.which("redis-cli"):  # the Redis baseline, in the same rounds
        redis = figures[("realistic", "redis AOF everysec (RPUSH, redis-cli --pipe)")]
        versus = figures[("realistic", "push-outbox --store, fresh vs Redis")]
        assert versus["ratio_to"] == redis["label"] and math.isclose(versus["ratio"], store["median"] / redis["median"])
    else:
        assert "redis baseline skipped" in proc.stdout


def test_a_wrong_reply_count_fails_the_run(tmp_path):
    """The suite's only assertion is correctness: a server that drops replies must fail it."""
    dropper = tmp_path / "dropper.sh"
    dropper.write_text('#!/bin/sh\nexec awk \'NR % 100 != 0\'\n')
    dropper.chmod(0o755)
    env = dict(os.environ, PUSH_OUTBOX_BIN=str(dropper))
    proc = subprocess.run([sys.executable, str(HERE / "run.py"), "--smoke", "--sections", "realistic", "--no-node",
                           "--workdir", str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "replies to 2000 requests" in proc.stderr


def test_callgrind_section_counts_instructions_per_save(tmp_path):
    if not shutil.which("valgrind"):
        pytest.skip("valgrind is not installed; the instructions section is optional (--callgrind)")
    out = tmp_path / "bench.json"
    env = dict(os.environ, PUSH_OUTBOX_BIN=str(binary()))
    proc = subprocess.run([sys.executable, str(HERE / "run.py"), "--smoke", "--sections", "", "--callgrind",
                           "--json", str(out), "--workdir", str(tmp_path)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    figures = json.loads(out.read_text())["sections"]["instructions"]["figures"]
    assert [f["label"] for f in figures] == [f"push-outbox {mode}, {mix}" for mix in ("realistic", "no user")
                                             for mode in ("--memory", "--store, fresh")]
    assert all(f["median"] > 0 for f in figures)


def test_scale_section_reports_every_block_and_the_whole_flush(tmp_path):
    """The optional scale section at tiny sizes: a figure per block, ratios to the fresh store of the same
    run, and the flush of the grown store (it fails the run when a save is missing from the flush)."""
    out = tmp_path / "bench.json"
    env = dict(os.environ, PUSH_OUTBOX_BIN=str(binary()))
    proc = subprocess.run([sys.executable, str(HERE / "run.py"), "--smoke", "--sections", "scale", "--scale", "3",
                           "--json", str(out), "--workdir", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    figures = {f["label"]: f for f in json.loads(out.read_text())["sections"]["scale"]["figures"]}
    assert [label for label in figures if label.startswith("block ")] == ["block 1 of 3", "block 2 of 3", "block 3 of 3"]
    assert figures["block 3 of 3"]["ratio_to"] == "fresh store, 2,000 saves"
    assert len(figures["flush --format usersTrack of 6,000"]["values"]) == SMOKE_RUNS
    assert figures["first reply with 6,000 pending"]["min"] > 0
