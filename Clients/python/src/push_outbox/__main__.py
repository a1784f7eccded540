"""The ``push-outbox`` command of the wheel (its console script), and ``python -m push_outbox``.

Both run the binary the client would spawn (:func:`push_outbox.find_binary`: in a platform wheel,
the one bundled in it) with the same arguments. On POSIX the binary *replaces* this Python process
(``os.execv``): same pid, so signals reach it directly, and its exit status and standard streams
are its own; nothing of Python stays in between. This module's own console scripts on ``PATH`` are
never taken for the binary (they would run themselves).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import NoReturn, Optional, Sequence

from ._discovery import BINARY_NAME, find_binary
from .errors import BinaryNotFound

__all__ = ["main"]

#: The exit status when no binary is found (a shell's "command not found").
NOT_FOUND = 127


def main(argv: Optional[Sequence[str]] = None) -> NoReturn:
    """Runs push-outbox with *argv* (default: this process's arguments); never returns."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        binary = find_binary()
    except BinaryNotFound as exc:
        sys.stderr.write(f"{BINARY_NAME}: {exc}\n")
        sys.exit(NOT_FOUND)
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execv(binary, [binary, *args])
        except OSError as exc:
            sys.stderr.write(f"{BINARY_NAME}: cannot run {binary}: {exc}\n")
            sys.exit(126)
    # Elsewhere: run it as a child and exit with its status (no exec that keeps the pid there).
    sys.exit(subprocess.call([binary, *args]))


if __name__ == "__main__":
    main()
