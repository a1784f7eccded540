"""A clone passes alone: no code, script or test in the repository reads the material directory that
sits beside the repository on the development machine (named by `SIBLING` below), beside or above
it. Test data lives under Tests/data (Tests/data/README.md). Documentation (*.md)
may mention where a copy came from; code may not use such a path. Run by `.ci/test-all` ("ci
scripts").
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()

# The sibling directory's name, built from parts so this file never spells a path to it.
SIBLING = "sha" + "red"
# A path to the sibling outside the clone: `../NAME`, `NAME/testdata`, a quoted path component
# ("NAME", 'NAME', "NAME/..."), or Swift's `appendingPathComponent("NAME")`.
OUTSIDE = re.compile(
    rf"\.\./{SIBLING}\b"
    rf"|\b{SIBLING}/testdata\b"
    rf"""|["']{SIBLING}(?:/[^"'\n]*)?["']"""
    rf'|PathComponent\(\s*"{SIBLING}"'
)
# Prose, licences and the test data itself are not code.
NOT_CODE = (".md", ".txt", ".json", ".1")
NOT_CODE_DIRS = ("Tests/data/", "Tests/fuzz/corpus/")
# What a checkout holds that is not the repository's (build products, environments, packages).
UNTRACKED_DIRS = {".git", ".build", ".venv", "node_modules", "dist", "__pycache__", ".mypy_cache"}


def repository_files() -> List[str]:
    """The repository's files: git's list in a clone, else every file outside build directories."""
    if (ROOT / ".git").exists():
        done = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=False
        )
        if done.returncode == 0:
            return [name for name in done.stdout.decode().split("\0") if name]
    found: List[str] = []
    for directory, subdirectories, names in os.walk(ROOT):
        subdirectories[:] = [
            d for d in subdirectories if d not in UNTRACKED_DIRS and not d.startswith(".build")
        ]
        for name in names:
            found.append((Path(directory) / name).relative_to(ROOT).as_posix())
    return found


def outside_path_uses(files: List[str], root: Path = ROOT) -> List[Tuple[str, int, str]]:
    uses: List[Tuple[str, int, str]] = []
    for rel in files:
        if rel == THIS or rel.endswith(NOT_CODE) or rel.startswith(NOT_CODE_DIRS):
            continue
        path = root / rel
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                uses.append((rel, number, line.strip()))
    return uses


def test_nothing_in_the_repository_reads_shared_beside_it() -> None:
    files = repository_files()
    assert len(files) > 100, f"found only {len(files)} files under {ROOT}"
    uses = outside_path_uses(files)
    assert not uses, f"these read ../{SIBLING}, which a fresh clone does not have:\n" + "\n".join(
        f"  {rel}:{number}: {line}" for rel, number, line in uses
    )


def test_the_pattern_sees_each_way_of_writing_the_path(tmp_path: Path) -> None:
    """The check is not vacuous: every form found in the repository before the data moved in."""
    n = SIBLING
    samples = {
        "a.swift": f'let s = root.deletingLastPathComponent().appendingPathComponent("{n}")\n',
        "b.py": f'suite = ROOT.parent / "{n}/testdata/JSONTestSuite"\n',
        "c.sh": f"cat ../{n}/testdata/openrpc/x.json\n",
        "d.py": f"p = root.parent / '{n}' / 'testdata'\n",
        "fine.py": f"{n} = Mutex()  # a {n} counter\n",
        "doc.md": f"copied from ../{n}/testdata\n",
    }
    for name, text in samples.items():
        (tmp_path / name).write_text(text)
    found = sorted(rel for rel, _, _ in outside_path_uses(sorted(samples), tmp_path))
    assert found == ["a.swift", "b.py", "c.sh", "d.py"], found


def test_the_json_test_suite_is_in_the_repository() -> None:
    suite = ROOT / "Tests" / "data" / "JSONTestSuite"
    parsing = suite / "test_parsing"
    assert parsing.is_dir(), f"test data missing: {parsing}"
    assert (suite / "LICENSE").is_file(), (
        f"missing: {suite / 'LICENSE'} (MIT, its copyright notice)"
    )
    counts = {p: len(list(parsing.glob(p + "*.json"))) for p in ("y_", "n_", "i_")}
    assert counts == {"y_": 95, "n_": 188, "i_": 35}, counts
