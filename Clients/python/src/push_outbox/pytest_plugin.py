"""pytest fixtures for testing code that uses push-outbox (registered by the wheel's ``pytest11``
entry point; without the wheel installed, ``-p push_outbox.pytest_plugin``).

- ``fake_braze``: a :class:`push_outbox.testing.FakeBraze` (``push-outbox fake-braze`` from the
  bundled binary), stopped after the test. ``@pytest.mark.fake_braze(api_key=..., args=[...])``.
- ``outbox``: a :class:`push_outbox.testing.TestOutbox` on a temporary store, stopped after the
  test; when the test also uses ``fake_braze``, it delivers there. ``@pytest.mark.outbox(
  fixed_clock="2026-01-01T00:00:00Z", id_seed=1, args=[...])`` or the options
  ``--outbox-fixed-clock`` and ``--outbox-id-seed`` make timestamps and ids reproducible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterator, Optional

import pytest

from .testing import FakeBraze, TestOutbox

__all__ = ["fake_braze", "outbox"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("push-outbox", "push-outbox test kit")
    group.addoption(
        "--outbox-fixed-clock", default=None, help="ISO 8601 instant for every outbox timestamp"
    )
    group.addoption(
        "--outbox-id-seed", default=None, type=int, help="seed for reproducible outbox ids"
    )
    group.addoption(
        "--outbox-binary", default=None, help="the push-outbox binary (default: the bundled one)"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "outbox(fixed_clock=None, id_seed=None, args=()): the outbox fixture's settings"
    )
    config.addinivalue_line(
        "markers", "fake_braze(api_key=..., args=()): the fake_braze fixture's settings"
    )


def _marker(request: pytest.FixtureRequest, name: str) -> Dict[str, Any]:
    marker = request.node.get_closest_marker(name)
    return dict(marker.kwargs) if marker is not None else {}


@pytest.fixture
def fake_braze(request: pytest.FixtureRequest) -> Iterator[FakeBraze]:
    settings = _marker(request, "fake_braze")
    binary: Optional[str] = request.config.getoption("--outbox-binary")
    fake = FakeBraze.start(binary=binary, **settings)
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def outbox(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestOutbox]:
    settings = _marker(request, "outbox")
    settings.setdefault("fixed_clock", request.config.getoption("--outbox-fixed-clock"))
    settings.setdefault("id_seed", request.config.getoption("--outbox-id-seed"))
    braze = request.getfixturevalue("fake_braze") if "fake_braze" in request.fixturenames else None
    binary: Optional[str] = request.config.getoption("--outbox-binary")
    started = TestOutbox.start(tmp_path / "outbox-store", braze=braze, binary=binary, **settings)
    try:
        yield started
    finally:
        started.close()
