"""Helpers for the language-server tests: the real `push-outbox lsp` binary, driven by pytest-lsp
(pygls' client), by Neovim and by Emacs with eglot.

The binary is $PUSH_OUTBOX_BIN, else .build/debug/push-outbox (then release) of this checkout.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def find_binary() -> Optional[Path]:
    env = os.environ.get("PUSH_OUTBOX_BIN")
    if env:
        return Path(env)
    for build in ("debug", "release"):
        path = REPO / ".build" / build / "push-outbox"
        if path.exists():
            return path
    return None


def utf16_column(line: str, byte_or_char_index: int) -> int:
    """UTF-16 code units before character index `byte_or_char_index` of `line`."""
    return len(line[:byte_or_char_index].encode("utf-16-le")) // 2


def utf8_column(line: str, char_index: int) -> int:
    return len(line[:char_index].encode("utf-8"))
