"""`python -m push_outbox` (and the wheel's `push-outbox` console script, which runs the same
`main`) from the source tree; the installed wheel's command is tested in Clients/tests/test_artifacts.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
from conftest import SRC, server_env, write_script
from push_outbox import find_binary

pytestmark = pytest.mark.timeout(60)


def env_for(**extra: str) -> Dict[str, str]:
    env = server_env()
    env["PYTHONPATH"] = str(SRC)
    env.update(extra)
    return env


def test_python_m_runs_the_binary_with_its_exit_status(binary: str, tmp_path: Path) -> None:
    for args in (["--version"], ["--no-such-flag"]):
        direct = subprocess.run([binary, *args], capture_output=True, timeout=30, env=server_env())
        via = subprocess.run(
            [sys.executable, "-m", "push_outbox", *args],
            capture_output=True,
            timeout=30,
            cwd=tmp_path,
            env=env_for(PUSH_OUTBOX_BIN=binary),
        )
        assert (via.returncode, via.stdout, via.stderr) == (
            direct.returncode,
            direct.stdout,
            direct.stderr,
        ), args


def test_python_m_without_a_binary_exits_127_naming_what_it_tried(tmp_path: Path) -> None:
    # A copy of the package away from this checkout's builds, and nothing on PATH.
    site = tmp_path / "site"
    shutil.copytree(SRC / "push_outbox", site / "push_outbox", ignore=shutil.ignore_patterns("bin"))
    env = env_for(PATH=str(tmp_path / "empty"), PYTHONPATH=str(site))
    env.pop("PUSH_OUTBOX_BIN", None)
    done = subprocess.run(
        [sys.executable, "-m", "push_outbox", "--version"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 127, done
    assert done.stdout == "" and "push-outbox executable not found" in done.stderr, done.stderr


def test_find_binary_passes_over_its_own_console_script_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a wheel without a bundled binary, the console script is on PATH before the real binary:
    taking it for the binary would make it run itself."""
    scripts, real = tmp_path / "venv-bin", tmp_path / "usr-bin"
    scripts.mkdir()
    real.mkdir()
    # What pip writes for [project.scripts] push-outbox = "push_outbox.__main__:main".
    console = write_script(
        scripts, "push-outbox", "# -*- coding: utf-8 -*-\nfrom push_outbox.__main__ import main\n"
    )
    (scripts / "push-outbox").write_text(
        f"#!{sys.executable}\nimport sys\nfrom push_outbox.__main__ import main\nsys.exit(main())\n"
    )
    wrapper = write_script(real, "push-outbox", "exec /bin/true\n")  # any other executable
    monkeypatch.setenv("PATH", os.pathsep.join([str(scripts), str(real)]))
    monkeypatch.delenv("PUSH_OUTBOX_BIN", raising=False)
    assert find_binary(bundled=tmp_path / "none") == wrapper != console
