"""The editor configurations of Clients/editors over `push-outbox lsp`, headless on a fixture file:
Neovim (`nvim --headless`, Clients/editors/neovim/push-outbox-lsp.lua) and Emacs with eglot
(`emacs --batch`, Clients/editors/emacs/push-outbox-eglot.el). Each reads back the diagnostics the
server published, a hover and the quick fixes. Skipped, with a message, where the editor (or eglot)
is not installed; .ci/setup installs them when it can."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, find_binary

pytestmark = pytest.mark.timeout(90)

PAYLOAD = FIXTURES / "broken.apns"


def run(command: list[str], tmp_path: Path) -> list[str]:
    binary = find_binary()
    if binary is None:
        pytest.fail("push-outbox binary not found: run `swift build` or set PUSH_OUTBOX_BIN")
    env = {
        **os.environ,
        "PUSH_OUTBOX_BIN": str(binary),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
        "REPO": str(REPO),
        "PAYLOAD": str(PAYLOAD),
    }
    proc = subprocess.run(
        command, capture_output=True, timeout=60, env=env, stdin=subprocess.DEVNULL, cwd=tmp_path
    )
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 0, f"stdout: {lines}\nstderr: {proc.stderr.decode()[-3000:]}"
    return lines


def test_neovim_reads_diagnostics_hover_completion_and_fixes(tmp_path: Path) -> None:
    if shutil.which("nvim") is None:
        pytest.skip("nvim is not installed (Debian: neovim; .ci/setup installs it as root)")
    lines = run(
        ["nvim", "--headless", "-u", "NONE", "-c", f"luafile {REPO / 'Tests/lsp/nvim_check.lua'}"],
        tmp_path,
    )
    assert lines == [
        "diagnostic 4:13-4:16 badge-type",
        "diagnostic 5:26-5:34 interruption-level-value",
        "diagnostic 7:9-7:14 attachment-needs-mutable-content",
        "diagnostic 7:59-7:65 att-file-type",
        "hover badge",
        'completion "passive" "active" "time-sensitive" "critical"',
        'actions Add "mutable-content": 1 to aps | Write the badge as the number 3',
    ]


def test_emacs_eglot_reads_diagnostics_hover_and_fixes(tmp_path: Path) -> None:
    if shutil.which("emacs") is None:
        pytest.skip("emacs is not installed (Debian: emacs-nox; .ci/setup installs it as root)")
    probe = subprocess.run(
        [
            "emacs",
            "--batch",
            "--eval",
            "(progn (require 'package) (package-initialize) (require 'eglot))",
        ],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("eglot is not installed (Emacs 29 ships it; Debian: elpa-eglot)")
    lines = run(["emacs", "--batch", "-l", str(REPO / "Tests/lsp/emacs_check.el")], tmp_path)
    diagnostics = [line for line in lines if line.startswith("diagnostic ")]
    assert [d.split()[1] for d in diagnostics] == ["5", "6", "8", "8"], lines
    codes = [re.search(r"\[([a-z-]+)\]", d) for d in diagnostics]
    assert [c.group(1) if c else None for c in codes] == [
        "badge-type",
        "interruption-level-value",
        "attachment-needs-mutable-content",
        "att-file-type",
    ]
    assert "badge must be an integer, not a string" in diagnostics[0]
    assert "interruption-level must be passive" in diagnostics[1]
    assert any("att.type must be one of" in d for d in diagnostics[2:])
    assert all(":error" in d or "eglot-error" in d for d in diagnostics), lines
    assert (
        "hover **badge**: The number on the app icon; 0 removes it. An integer, never a string."
        in lines
    )
    assert (
        'actions Add "mutable-content": 1 to aps | Write the badge as the number 3' in lines
        or 'actions Write the badge as the number 3 | Add "mutable-content": 1 to aps' in lines
    )
