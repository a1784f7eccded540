"""The documents stay true: README.md is a front door (at most 250 lines) whose quick start and
example session run as printed; every relative link in the project's Markdown resolves, anchors
included; every flag a page's commands and tables show is one `push-outbox --help` lists; and
ARCHITECTURE.md names only entry points and tests that exist, with a test or a
compiler rule behind every "Architecture invariant". Run by `.ci/test-all` ("ci scripts"); the
two cases that run the binary need one ($PUSH_OUTBOX_BIN or .build/debug/push-outbox).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List, Set

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
# Markdown read by people in the repository: every page the README links to, and their neighbours.
PAGES = [
    "README.md",
    "ARCHITECTURE.md",
    "CHANGELOG.md",
    "Protocol/README.md",
    "Protocol/command-line.md",
    "Protocol/delivery.md",
    "Protocol/fleet.md",
    "Protocol/import.md",
    "Protocol/operations.md",
    "Sources/OutboxStore/README.md",
    "Tests/bench/RESULTS.md",
    "Tests/fault/README.md",
    "Tests/model/README.md",
    "Tests/fuzz/README.md",
    "Tests/README.md",
    "Clients/editors/README.md",
    "Clients/python/README.md",
    "Clients/node/README.md",
    "Clients/testing.md",
]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def real_binary() -> Path:
    explicit = os.environ.get("PUSH_OUTBOX_BIN")
    path = Path(explicit) if explicit else ROOT / ".build" / "debug" / "push-outbox"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"no push-outbox binary at {path} (swift build, or set PUSH_OUTBOX_BIN)")
    return path.resolve()


def section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def code_blocks(text: str, language: str) -> List[str]:
    return re.findall(r"^```" + language + r"\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


# MARK: - the README


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; depth belongs in the pages it links to"


def test_the_readme_example_session_replays_as_printed() -> None:
    """The session is in transcript form; it runs as every transcript does (Protocol/README.md)."""
    session = code_blocks(section(README.read_text(encoding="utf-8"), "## Example session"), "text")
    assert len(session) == 1, session
    lines = session[0].splitlines()
    sent = [line[2:] for line in lines if line.startswith("> ")]
    expected = [json.loads(line[2:]) for line in lines if line.startswith("< ")]
    assert sent and len(sent) + len(expected) == len(lines), lines
    done = subprocess.run(
        [
            str(real_binary()),
            "--memory",
            "--fixed-clock",
            "2026-01-01T00:00:00.000Z",
            "--id-seed",
            "1",
        ],
        input="".join(line + "\n" for line in sent).encode(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert [json.loads(line) for line in done.stdout.decode().splitlines()] == expected


def test_the_readme_quick_start_runs_as_printed(tmp_path: Path) -> None:
    """The quick start's first command, exactly as printed, from a directory whose
    `.ci/build-static` stands in for the release build (it prints the built binary's path, as the
    real script does); the second command, `bash .ci/test-all`, is what CI itself runs."""
    [block] = code_blocks(section(README.read_text(encoding="utf-8"), "## Quick start"), "sh")
    first = block.split("\n\n")[0]
    assert "bash .ci/build-static" in first and "bash .ci/test-all" in block, block
    stub = tmp_path / ".ci" / "build-static"
    stub.parent.mkdir()
    stub.write_text(f"#!/usr/bin/env bash\necho {real_binary()}\n")
    stub.chmod(0o755)
    done = subprocess.run(
        ["bash", "-c", first], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2] and all("result" in r for r in replies), replies
    [body] = replies[1]["result"]["requests"]
    assert body["events"][0]["name"] == "push_opened", body


# MARK: - links


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> Set[str]:
    found: Set[str] = set()
    counts: Dict[str, int] = {}
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page: str) -> None:
    source = ROOT / page
    text = FENCE.sub("", source.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, f"{page}: " + "; ".join(broken)


# MARK: - ARCHITECTURE.md


def swift_declares(type_name: str) -> List[Path]:
    pattern = re.compile(r"\b(?:struct|class|enum|actor|protocol|extension)\s+" + type_name + r"\b")
    return [f for f in (ROOT / "Sources").rglob("*.swift") if pattern.search(f.read_text("utf-8"))]


def test_the_entry_points_exist() -> None:
    text = section(ARCHITECTURE.read_text(encoding="utf-8"), "## Entry points")
    named = sorted(set(re.findall(r"`([A-Z]\w+)\.([a-z]\w*)`", text)))
    assert ("RequestLoop", "run") in named and ("Store", "save") in named, named
    missing = [
        f"{type_name}.{method}"
        for type_name, method in named
        if not any(
            re.search(r"\bfunc " + method + r"\b", f.read_text("utf-8"))
            for f in swift_declares(type_name)
        )
    ]
    assert not missing, f"ARCHITECTURE.md names entry points that do not exist: {missing}"


def invariants() -> List[str]:
    paragraphs = ARCHITECTURE.read_text(encoding="utf-8").split("\n\n")
    return [p for p in paragraphs if p.startswith("**Architecture invariant:**")]


def swift_test_exists(suite: str, name: str) -> bool:
    declares = re.compile(r"\bstruct " + suite + r"\b")
    return any(
        declares.search(text) and re.search(r"\bfunc " + name + r"\b", text)
        for text in (f.read_text("utf-8") for f in (ROOT / "Tests").rglob("*.swift"))
    )


def test_every_invariant_names_tests_that_exist() -> None:
    found = invariants()
    assert len(found) >= 12, "ARCHITECTURE.md has fewer invariants than targets"
    missing = []
    for paragraph in found:
        swift = re.findall(r"`([A-Z]\w*Tests)\.(\w+)`", paragraph)
        python = re.findall(r"`((?:Tests|Clients|Protocol)/[\w/]+\.py)::(\w+)`", paragraph)
        assert swift or python, f"an invariant names no test: {paragraph[:120]}"
        missing += [f"{s}.{n}" for s, n in swift if not swift_test_exists(s, n)]
        for path, name in python:
            file = ROOT / path
            if not (
                file.is_file() and re.search(r"\bdef " + name + r"\(", file.read_text("utf-8"))
            ):
                missing.append(f"{path}::{name}")
    assert not missing, f"ARCHITECTURE.md names tests that do not exist: {missing}"


def test_every_target_has_an_invariant() -> None:
    manifest = (ROOT / "Package.swift").read_text(encoding="utf-8")
    layers = re.findall(r'^\s*\(\s*"(Outbox\w+)"', manifest, re.MULTILINE)
    assert len(layers) >= 10, layers
    text = ARCHITECTURE.read_text(encoding="utf-8")
    for target in [*layers, "push-outbox"]:
        start = text.find(f"### `{target}`")
        assert start >= 0, f"ARCHITECTURE.md has no code map entry for {target}"
        entry = text[start : text.find("\n### ", start + 1)]
        assert "**Architecture invariant:**" in entry, f"{target} has no invariant"


# MARK: - flags


def flags_shown(text: str) -> Set[str]:
    """The flags of every `push-outbox …` command in the page's shell blocks, and of its tables' rows."""
    found: Set[str] = set()
    for block in code_blocks(text, "sh"):
        for command in block.replace("\\\n", " ").splitlines():
            words = command.split()
            if "push-outbox" in words:  # the flags after it are push-outbox's (not `claude`'s)
                after = words[words.index("push-outbox") :]
                found |= {
                    w.split("=")[0] for w in after if re.fullmatch(r"--[a-z][a-z-]+(=.*)?", w)
                }
    for row in re.findall(r"^\| `(--[a-z][a-z-]+)", text, re.MULTILINE):
        found.add(row)
    return found


@pytest.mark.parametrize("page", [p for p in PAGES if p != "CHANGELOG.md"])
def test_every_flag_a_page_shows_is_one_the_binary_knows(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    shown = flags_shown(text)
    if not shown:
        return
    binary = str(real_binary())
    helps = [subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout]
    for sub in ("deliver", "flush", "import", "relay", "verify", "dump", "lsp"):
        done = subprocess.run([binary, sub, "--help"], capture_output=True, text=True, timeout=30)
        helps.append(done.stdout + done.stderr)
    known = set(re.findall(r"--[a-z][a-z-]+", "\n".join(helps)))
    unknown = sorted(shown - known)
    assert not unknown, f"{page} shows flags push-outbox --help does not list: {unknown}"
