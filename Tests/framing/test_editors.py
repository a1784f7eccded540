"""The editor examples of Clients/editors, run against the real binary: Emacs (`emacs --batch`, the
built-in jsonrpc.el, Content-Length framing) and Neovim (`nvim --headless`, jobstart with line
callbacks, newline framing). Each must save, flush, print the item and end with push-outbox's exit 0.
Skipped, with a message, where the editor is not installed (.ci/setup installs both when it can)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.timeout(90)

EDITORS = REPO / "Clients" / "editors"
EXPECTED = [
    r"saved [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} \(pending 1\)",
    r"flushed 1 item\(s\): push_opened",
    r"push-outbox exited with 0",
]

COMMANDS = {
    "emacs": [
        "emacs",
        "--batch",
        "-l",
        str(EDITORS / "emacs/push-outbox-demo.el"),
        "-f",
        "push-outbox-demo",
    ],
    "nvim": [
        "nvim",
        "--headless",
        "-u",
        "NONE",
        "-c",
        f"luafile {EDITORS / 'neovim/push-outbox-demo.lua'}",
    ],
}


@pytest.mark.parametrize("editor", sorted(COMMANDS))
def test_editor_example_saves_flushes_and_shows_the_result(
    binary: Path, editor: str, tmp_path: Path
) -> None:
    if shutil.which(editor) is None:
        pytest.skip(
            f"{editor} is not installed (Debian: emacs-nox / neovim; .ci/setup installs them as root)"
        )
    env = {
        **os.environ,
        "PUSH_OUTBOX_BIN": str(binary),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
    }
    proc = subprocess.run(
        COMMANDS[editor],
        capture_output=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == len(EXPECTED), (
        f"stdout: {proc.stdout!r}\nstderr: {proc.stderr.decode()[-2000:]}"
    )
    for line, pattern in zip(lines, EXPECTED):
        assert re.fullmatch(pattern, line), (line, pattern)
    assert proc.returncode == 0
