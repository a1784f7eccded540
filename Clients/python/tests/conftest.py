"""Shared fixtures. Every subprocess test runs against the REAL push-outbox binary
(found like the client finds it) unless it says it uses tests/fake_server.py.

A missing binary is a test FAILURE with instructions, never a skip.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Coroutine, Dict, Iterator, List, Optional, TypeVar

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # Clients/python
REPO_ROOT = HERE.parents[2]  # the push-outbox checkout
SRC = PACKAGE_ROOT / "src"

# Test the package in this checkout, even if another version is pip-installed.
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from push_outbox import AsyncOutbox, BinaryNotFound, Outbox, find_binary  # noqa: E402

PROTOCOL_DIR = REPO_ROOT / "Protocol"
TRANSCRIPTS_DIR = PROTOCOL_DIR / "transcripts"
OPENRPC_PATH = PROTOCOL_DIR / "openrpc.json"
FAKE_SERVER = HERE / "fake_server.py"

T = TypeVar("T")


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError(
            "pytest-timeout is required (every subprocess test has a timeout): "
            "pip install -r Clients/python/requirements-test.txt"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    # Belt and braces: every test has a timeout even if the ini file was not picked up.
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(120))


def server_env() -> Dict[str, str]:
    """The environment minus PUSH_OUTBOX_* (each flag has an env twin that would leak in)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}


@pytest.fixture(scope="session")
def binary() -> str:
    try:
        return find_binary()
    except BinaryNotFound as exc:
        pytest.fail(
            "The push-outbox binary is required for this test and was not found.\n"
            f"Build it (`swift build` in {REPO_ROOT}) or set PUSH_OUTBOX_BIN=/path/to/push-outbox.\n"
            f"Discovery said: {exc}",
            pytrace=False,
        )


@pytest.fixture
def spawn(binary: str) -> Iterator[Callable[..., Outbox]]:
    """Factory: ``spawn(**kw)`` starts the real server (``--memory`` unless ``store=`` given)."""
    started: List[Outbox] = []

    def _spawn(**kw: Any) -> Outbox:
        kw.setdefault("binary", binary)
        kw.setdefault("env", server_env())
        kw.setdefault("timeout", 15.0)
        if "store" not in kw:
            kw.setdefault("memory", True)
        ob = Outbox.spawn(**kw)
        started.append(ob)
        return ob

    yield _spawn
    for ob in started:
        ob.close(timeout=2.0)


@pytest.fixture
def aspawn(binary: str) -> Callable[..., AsyncOutbox]:
    """Factory for an (unstarted) AsyncOutbox on the real server; use with ``async with``."""

    def _spawn(**kw: Any) -> AsyncOutbox:
        kw.setdefault("binary", binary)
        kw.setdefault("env", server_env())
        kw.setdefault("timeout", 15.0)
        if "store" not in kw:
            kw.setdefault("memory", True)
        return AsyncOutbox.spawn(**kw)

    return _spawn


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run an asyncio test body (no pytest-asyncio needed)."""
    return asyncio.run(coro)


@pytest.fixture
def fake_binary(tmp_path: Path) -> str:
    """An executable that runs tests/fake_server.py with the current interpreter."""
    path = tmp_path / "fake-push-outbox"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_SERVER}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def write_script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def openrpc_document() -> Optional[Dict[str, Any]]:
    import json

    if not OPENRPC_PATH.exists():
        return None
    with OPENRPC_PATH.open("rb") as f:
        return json.load(f)
