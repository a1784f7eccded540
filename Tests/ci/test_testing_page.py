"""Clients/testing.md: its Python and Node examples run as printed (the Python one under pytest with
the plugin, the Node one under node --test importing `push-outbox/testing` as a consumer would), and
each stays a short harness (at most 15 lines)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "Clients" / "testing.md"


def blocks(language: str) -> List[str]:
    return re.findall(
        r"^```" + language + r"\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.M | re.S
    )


def binary() -> str:
    explicit = os.environ.get("PUSH_OUTBOX_BIN")
    path = Path(explicit) if explicit else ROOT / ".build" / "debug" / "push-outbox"
    assert path.is_file(), f"no push-outbox binary at {path} (swift build, or set PUSH_OUTBOX_BIN)"
    return str(path.resolve())


@pytest.mark.parametrize("language", ["python", "js"])
def test_each_example_is_a_short_harness(language: str) -> None:
    [example] = blocks(language)
    assert len(example.strip().splitlines()) <= 15, example


def test_the_python_example_runs_as_printed(tmp_path: Path) -> None:
    [example] = blocks("python")
    (tmp_path / "test_example.py").write_text(example)
    env = {
        **os.environ,
        "PUSH_OUTBOX_BIN": binary(),
        "PYTHONPATH": str(ROOT / "Clients" / "python" / "src"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "push_outbox.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "test_example.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_the_node_example_runs_as_printed(tmp_path: Path) -> None:
    [example] = blocks("js")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "push-outbox").symlink_to(ROOT / "Clients" / "node")
    (tmp_path / "example.test.mjs").write_text(example)
    done = subprocess.run(
        ["node", "--test", "example.test.mjs"],
        cwd=tmp_path,
        env={**os.environ, "PUSH_OUTBOX_BIN": binary()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "# pass 1" in done.stdout, done.stdout + done.stderr
