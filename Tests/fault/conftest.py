"""Shared helpers for the push-outbox fault-injection tests.

Every test spawns the real binary (env PUSH_OUTBOX_BIN, else .build/debug/push-outbox in the
repository) on a store directory under pytest's tmp_path, injects a fault, restarts, and checks:

* every save answered ok is still there, exactly once, same id, same seq, same typed values;
* nothing is invented (recovered items are a subset of what was sent);
* the process never dies on its own (exit code 0 or the documented one, never a signal we did not send).

Python 3.11 stdlib + pytest (+ pytest-timeout for the per-test timeout marks).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

# Summary lines (e.g. "fault: rounds=20 acknowledged=N lost=0") shown at the end of the run,
# so they are visible without `pytest -s`.
SUMMARY: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # Harmless if pytest-timeout is installed (it registers the marker itself); avoids an
    # "unknown marker" warning if it is not.
    config.addinivalue_line("markers", "timeout(seconds): per-test timeout (pytest-timeout)")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    if SUMMARY:
        terminalreporter.section("fault-injection summary")
        for line in SUMMARY:
            terminalreporter.write_line(line)


def report(line: str) -> None:
    """Prints a summary line now (visible with -s) and again in the terminal summary."""
    print(line, flush=True)
    SUMMARY.append(line)


# ---------------------------------------------------------------------------------------------
# Binary discovery
# ---------------------------------------------------------------------------------------------


def find_binary() -> Path | None:
    env = os.environ.get("PUSH_OUTBOX_BIN")
    if env:
        return Path(env)
    for candidate in (REPO / ".build" / "debug" / "push-outbox", REPO / ".build" / "release" / "push-outbox"):
        if candidate.exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def outbox_bin() -> Path:
    path = find_binary()
    if path is None or not os.access(path, os.X_OK):
        pytest.fail(
            f"push-outbox binary not found ({path or REPO / '.build/debug/push-outbox'}); "
            "run `swift build` or set PUSH_OUTBOX_BIN",
            pytrace=False,
        )
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A fresh (not yet existing) store directory."""
    return tmp_path / "store"


@pytest.fixture
def spawn(outbox_bin: Path):
    """spawn(store, *args, **kw) -> Outbox; every process still running at teardown is killed."""
    started: list[Outbox] = []

    def _spawn(store: Path | None, *args: str, **kw: Any) -> Outbox:
        ob = Outbox(outbox_bin, store, *args, **kw)
        started.append(ob)
        return ob

    yield _spawn
    for ob in started:
        ob.ensure_dead()



# ---------------------------------------------------------------------------------------------
# Helpers, re-exported so tests import everything from conftest:
# outbox.py (the binary over pipes), ledger.py (saves and invariants),
# store_files.py (formats 1 and 2), faults.py (file system and libc faults)
# ---------------------------------------------------------------------------------------------

from outbox import *  # noqa: E402,F401,F403
from ledger import *  # noqa: E402,F401,F403
from store_files import *  # noqa: E402,F401,F403
from faults import *  # noqa: E402,F401,F403
